package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/events"
)

// RotationOverlap is how long the previous secret keeps signing beside a new one, so a
// receiver can deploy the new secret without losing a webhook.
const RotationOverlap = 24 * time.Hour

// Service owns webhook endpoints and their deliveries.
type Service struct {
	pool  *pgxpool.Pool
	urls  URLPolicy
	queue events.DeliveryQueue
}

// NewService checks endpoint URLs with urls and enqueues redeliveries on queue.
func NewService(pool *pgxpool.Pool, urls URLPolicy, queue events.DeliveryQueue) *Service {
	return &Service{pool: pool, urls: urls, queue: queue}
}

// EndpointParams is a validated POST /webhook-endpoints body.
type EndpointParams struct {
	URL           string
	EnabledEvents []string
	Description   *string
}

// CheckURL refuses a URL webhooks are never sent to (URLPolicy). CreateEndpoint and
// UpdateEndpoint leave it to their caller, to do before the transaction: it may resolve the host, and a
// transaction holds its connection (and an idempotency key's lock) while it waits.
func (s *Service) CheckURL(ctx context.Context, raw string) error {
	return s.urls.Check(ctx, raw)
}

// CreateEndpoint registers an endpoint with a fresh secret in tx (a request's, under its
// Idempotency-Key if it has one), once the caller has checked its URL (CheckURL).
func (s *Service) CreateEndpoint(ctx context.Context, tx db.Tx, accountID string, p EndpointParams) (db.WebhookEndpoint, error) {
	e, err := tx.WebhookEndpointInsert(ctx, db.WebhookEndpointInsertParams{
		ID:            domain.NewID("we"),
		AccountID:     accountID,
		Url:           p.URL,
		Description:   p.Description,
		EnabledEvents: p.EnabledEvents,
		Secret:        NewSecret(),
	})
	if err != nil {
		return db.WebhookEndpoint{}, fmt.Errorf("insert webhook endpoint: %w", err)
	}
	return e, nil
}

// GetEndpoint returns one endpoint of the account.
func (s *Service) GetEndpoint(ctx context.Context, accountID, id string) (db.WebhookEndpoint, error) {
	e, err := db.Reads(s.pool).WebhookEndpointGetByID(ctx, db.WebhookEndpointGetByIDParams{AccountID: accountID, ID: id})
	if err != nil {
		return db.WebhookEndpoint{}, fmt.Errorf("get webhook endpoint %s: %w", id, db.Translate(err))
	}
	return e, nil
}

// ListEndpoints returns one page, newest first, and whether another page follows.
func (s *Service) ListEndpoints(ctx context.Context, accountID string, p db.Page) ([]db.WebhookEndpoint, bool, error) {
	q := db.Reads(s.pool)
	createdAt := func(id string) (time.Time, error) {
		e, err := q.WebhookEndpointGetByID(ctx, db.WebhookEndpointGetByIDParams{AccountID: accountID, ID: id})
		return e.CreatedAt, err
	}
	return db.ListPage(p, "webhook endpoint", createdAt, func(after db.After, rowLimit int32) ([]db.WebhookEndpoint, error) {
		return q.WebhookEndpointList(ctx, db.WebhookEndpointListParams{
			AccountID: accountID, AfterCreatedAt: after.CreatedAt, AfterID: after.ID, RowLimit: rowLimit,
		})
	})
}

// EndpointPatch is a JSON merge patch of an endpoint: nil members are left alone.
type EndpointPatch struct {
	URL            *string
	EnabledEvents  []string
	SetDescription bool    // description was present in the patch
	Description    *string // its value; nil clears it
	Disabled       *bool
}

// UpdateEndpoint applies patch in tx if the endpoint's version still satisfies pre, in one
// conditional UPDATE as payments do; the caller has checked the patch's URL (CheckURL). A
// patch that changes nothing returns the endpoint as it is, with its version.
func (s *Service) UpdateEndpoint(ctx context.Context, tx db.Tx, accountID, id string, pre domain.Precondition, patch EndpointPatch) (db.WebhookEndpoint, error) {
	args := db.WebhookEndpointUpdateParams{
		Url:            patch.URL,
		EnabledEvents:  patch.EnabledEvents,
		SetDescription: patch.SetDescription,
		Description:    patch.Description,
		Disabled:       patch.Disabled,
		AccountID:      accountID,
		ID:             id,
		AnyVersion:     pre.Any,
		Versions:       pre.Versions,
	}
	return updateOrExplain(ctx, tx, args, pre)
}

// updateOrExplain runs the conditional UPDATE. When it matches no row, the endpoint is
// missing (404), the precondition is stale (412) or the patch changes nothing (the endpoint
// is returned unchanged): the row is locked and read to tell which, and the UPDATE runs
// again under the lock in case the endpoint changed in between, as payments do.
func updateOrExplain(ctx context.Context, tx db.Tx, args db.WebhookEndpointUpdateParams, pre domain.Precondition) (db.WebhookEndpoint, error) {
	e, err := tx.WebhookEndpointUpdate(ctx, args)
	if !errors.Is(db.Translate(err), domain.ErrNotFound) {
		return e, wrapUpdate(args.ID, err)
	}
	current, err := tx.WebhookEndpointGetForUpdate(ctx, db.WebhookEndpointGetForUpdateParams{AccountID: args.AccountID, ID: args.ID})
	if err != nil {
		err = db.NotFoundOrAccountDeleted(ctx, tx.Queries, args.AccountID, err)
		return db.WebhookEndpoint{}, wrapUpdate(args.ID, db.Translate(err))
	}
	if !pre.Matches(current.Version) {
		return db.WebhookEndpoint{}, &domain.PreconditionFailedError{CurrentVersion: current.Version}
	}
	e, err = tx.WebhookEndpointUpdate(ctx, args)
	if errors.Is(db.Translate(err), domain.ErrNotFound) {
		return current, nil // a no-op
	}
	return e, wrapUpdate(args.ID, err)
}

func wrapUpdate(id string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("update webhook endpoint %s: %w", id, err)
}

// DeleteEndpoint deletes an endpoint with its deliveries. With pre (an If-Match), only while
// the endpoint is at a version pre names, checked on its row, locked, as an update's is: a
// *domain.PreconditionFailedError otherwise. The deliveries are locked first, as a record of
// an attempt locks them (WebhookDeliveryLockByEndpoint).
func (s *Service) DeleteEndpoint(ctx context.Context, accountID, id string, pre *domain.Precondition) error {
	return db.InTx(ctx, s.pool, func(tx db.Tx) error {
		err := tx.WebhookDeliveryLockByEndpoint(ctx, db.WebhookDeliveryLockByEndpointParams{AccountID: accountID, EndpointID: id})
		if err != nil {
			return fmt.Errorf("delete webhook endpoint %s: %w", id, err)
		}
		if err := lockAt(ctx, tx, accountID, id, pre); err != nil {
			return fmt.Errorf("delete webhook endpoint %s: %w", id, err)
		}
		n, err := tx.WebhookEndpointDelete(ctx, db.WebhookEndpointDeleteParams{AccountID: accountID, ID: id})
		if err != nil {
			return fmt.Errorf("delete webhook endpoint %s: %w", id, err)
		}
		if n == 0 {
			err := db.NotFoundOrAccountDeleted(ctx, tx.Queries, accountID, domain.ErrNotFound)
			return fmt.Errorf("delete webhook endpoint %s: %w", id, err)
		}
		return nil
	})
}

// lockAt locks the endpoint's row for a change under an optional If-Match: with pre, the
// change waits for the row and goes ahead only while its version satisfies pre
// (domain.PreconditionFailedError otherwise). Without, nothing is read.
func lockAt(ctx context.Context, tx db.Tx, accountID, id string, pre *domain.Precondition) error {
	if pre == nil {
		return nil
	}
	current, err := tx.WebhookEndpointGetForUpdate(ctx, db.WebhookEndpointGetForUpdateParams{AccountID: accountID, ID: id})
	if err != nil {
		return db.Translate(db.NotFoundOrAccountDeleted(ctx, tx.Queries, accountID, err))
	}
	if !pre.Matches(current.Version) {
		return &domain.PreconditionFailedError{CurrentVersion: current.Version}
	}
	return nil
}

// RotateSecret gives the endpoint a new secret in tx (a request's, under its
// Idempotency-Key if it has one); the current one keeps signing beside it for RotationOverlap.
// With pre, only while the endpoint's version satisfies it, as DeleteEndpoint.
func (s *Service) RotateSecret(ctx context.Context, tx db.Tx, accountID, id string, pre *domain.Precondition) (db.WebhookEndpoint, error) {
	if err := lockAt(ctx, tx, accountID, id, pre); err != nil {
		return db.WebhookEndpoint{}, fmt.Errorf("rotate secret of webhook endpoint %s: %w", id, err)
	}
	e, err := tx.WebhookEndpointRotateSecret(ctx, db.WebhookEndpointRotateSecretParams{
		Secret:            NewSecret(),
		PreviousExpiresAt: new(time.Now().Add(RotationOverlap)),
		AccountID:         accountID,
		ID:                id,
	})
	if err != nil {
		err = db.NotFoundOrAccountDeleted(ctx, tx.Queries, accountID, err)
		return db.WebhookEndpoint{}, fmt.Errorf("rotate secret of webhook endpoint %s: %w", id, db.Translate(err))
	}
	return e, nil
}

// SigningSecrets are the secrets an attempt at now is signed with: the current one, and the
// previous one while its rotation overlap lasts.
func SigningSecrets(e db.WebhookEndpoint, now time.Time) []string {
	secrets := []string{e.Secret}
	if e.PreviousSecret != nil && e.PreviousSecretExpiresAt != nil && now.Before(*e.PreviousSecretExpiresAt) {
		secrets = append(secrets, *e.PreviousSecret)
	}
	return secrets
}
