package payments

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/trace"
)

// Payment statuses.
const (
	StatusSucceeded         = "succeeded"
	StatusFailed            = "failed"
	StatusRefunded          = "refunded"
	StatusPartiallyRefunded = "partially_refunded"
)

// MaxMetadataKeys bounds metadata after a merge patch too (the schema bounds each request).
const MaxMetadataKeys = 50

// Service owns payments.
type Service struct {
	pool      *pgxpool.Pool
	processor processor.Processor
	outbox    *events.Outbox
	// The reads of one payment by id, the read a client makes most, coalesced under load.
	reads    *db.Coalescer[paymentKey, db.Payment]
	versions *db.Coalescer[paymentKey, db.PaymentVersionsRow]
}

// paymentKey is a payment as a read asks for it: its id within its account.
type paymentKey struct{ accountID, id string }

// NewService charges cards through proc and records every change's event in outbox.
func NewService(pool *pgxpool.Pool, proc processor.Processor, outbox *events.Outbox) *Service {
	q := db.Reads(pool)
	return &Service{
		pool: pool, processor: proc, outbox: outbox,
		// A read that goes alone is the plain primary-key lookup: PostgreSQL plans it for less
		// than the lookup of many, which matters behind a transaction pooler, where it plans
		// every statement it runs.
		reads: db.NewCoalescer(func(ctx context.Context, keys []paymentKey) ([]db.Payment, error) {
			if len(keys) == 1 {
				return db.OneRow(q.PaymentGetByID(ctx, db.PaymentGetByIDParams{AccountID: keys[0].accountID, ID: keys[0].id}))
			}
			return q.PaymentGetByIDs(ctx, byIDs(keys))
		}, func(p db.Payment) paymentKey { return paymentKey{p.AccountID, p.ID} }),
		versions: db.NewCoalescer(func(ctx context.Context, keys []paymentKey) ([]db.PaymentVersionsRow, error) {
			if len(keys) == 1 {
				k := keys[0]
				v, err := q.PaymentVersion(ctx, db.PaymentVersionParams{AccountID: k.accountID, ID: k.id})
				return db.OneRow(db.PaymentVersionsRow{AccountID: k.accountID, ID: k.id, Version: v}, err)
			}
			return q.PaymentVersions(ctx, db.PaymentVersionsParams(byIDs(keys)))
		}, func(p db.PaymentVersionsRow) paymentKey { return paymentKey{p.AccountID, p.ID} }),
	}
}

// Close ends the shared reads in flight (db.Coalescer.Close): the last thing before the pool
// closes.
func (s *Service) Close() {
	s.reads.Close()
	s.versions.Close()
}

// byIDs is the arguments of PaymentGetByIDs and PaymentVersions: keys as two arrays.
func byIDs(keys []paymentKey) db.PaymentGetByIDsParams {
	args := db.PaymentGetByIDsParams{AccountIds: make([]string, len(keys)), Ids: make([]string, len(keys))}
	for i, k := range keys {
		args.AccountIds[i], args.Ids[i] = k.accountID, k.id
	}
	return args
}

// CreateParams is a validated POST /payments body.
type CreateParams struct {
	Amount        int64
	Currency      string
	PaymentMethod string
	Description   *string
	Metadata      map[string]string
}

// Create charges the card, then records the payment and its event, all in tx: the caller's
// transaction, which has already claimed the idempotency key. A declined card is not an
// error: the payment is recorded as failed. A processor outage is an error, so the caller's
// transaction rolls back and leaves no trace.
//
// Charging inside the transaction is right only because this processor is simulated: local,
// instantaneous to undo (it has nothing to undo) and unable to half-succeed. A real card
// network is a foreign system: its charge cannot be rolled back with ours, and a crash
// between its answer and our commit would lose a real charge. That needs Brandur Leach's
// atomic phases: commit the key with a recovery point ("started"), call the network with the
// key as its idempotency key, commit the result ("charge_created"), and let a completer
// resume keys left mid-way.
//
// Create returns the payment with its resource encoded as JSON: the bytes its event carries,
// so a caller answering with the resource need not encode it again.
func (s *Service) Create(ctx context.Context, tx db.Tx, accountID string, p CreateParams) (db.Payment, []byte, error) {
	span := trace.Start(ctx, "charge")
	result, err := s.processor.Charge(ctx, processor.Charge{
		Amount: p.Amount, Currency: p.Currency, PaymentMethod: p.PaymentMethod,
	})
	span.Fail(err)
	span.End()
	if err != nil {
		return db.Payment{}, nil, fmt.Errorf("charge %s: %w", p.PaymentMethod, err)
	}
	status, eventType := StatusSucceeded, events.PaymentSucceeded
	var failureCode *string
	if !result.Approved {
		status, eventType, failureCode = StatusFailed, events.PaymentFailed, &result.FailureCode
	}
	if p.Metadata == nil {
		p.Metadata = map[string]string{}
	}
	metadata, err := json.Marshal(p.Metadata)
	if err != nil {
		return db.Payment{}, nil, err
	}
	// The payment is built here whole, so its insert needs no answer and goes with the
	// commit (tx.Later): the create's transaction is the claim's round trip and the commit's.
	// Its time is the server's clock to PostgreSQL's precision (microseconds), so the resource
	// answered now is the resource a GET reads back.
	now := time.Now().UTC().Truncate(time.Microsecond)
	pay := db.Payment{
		ID:            domain.NewID("pay"),
		AccountID:     accountID,
		Amount:        p.Amount,
		Currency:      p.Currency,
		Status:        status,
		PaymentMethod: p.PaymentMethod,
		FailureCode:   failureCode,
		Description:   p.Description,
		Metadata:      metadata,
		Version:       1,
		CreatedAt:     now,
		UpdatedAt:     now,
	}
	err = tx.Later.PaymentInsert(ctx, db.PaymentInsertParams{
		ID:            pay.ID,
		AccountID:     pay.AccountID,
		Amount:        pay.Amount,
		Currency:      pay.Currency,
		Status:        pay.Status,
		PaymentMethod: pay.PaymentMethod,
		FailureCode:   pay.FailureCode,
		Description:   pay.Description,
		Metadata:      pay.Metadata,
		CreatedAt:     pay.CreatedAt,
	})
	if err != nil {
		return db.Payment{}, nil, fmt.Errorf("insert payment: %w", err)
	}
	payload, err := s.recordEvent(ctx, tx, eventType, pay)
	if err != nil {
		return db.Payment{}, nil, err
	}
	return pay, payload, nil
}

// CreateReadsAhead are the reads Create will need after the idempotency claim, for the claim
// to carry (db.Ahead): the webhook endpoints its event fans out to, for either outcome of the
// charge, which is only known later, in one statement. So a create is two round trips:
// BEGIN, the key's lock, its row and this read; then the payment, its event and the key's
// row with the answer, with COMMIT.
func CreateReadsAhead(accountID string) []db.Ahead {
	return []db.Ahead{db.SubscribedEndpointsAhead(accountID, events.PaymentSucceeded, events.PaymentFailed)}
}

// recordEvent records an event carrying the payment's resource and returns the resource as
// it encoded it, for a caller that answers with the same bytes.
func (s *Service) recordEvent(ctx context.Context, tx db.Tx, eventType string, p db.Payment) ([]byte, error) {
	payload, err := EncodeResource(p)
	if err != nil {
		return nil, err
	}
	return payload, s.outbox.RecordEncoded(ctx, tx, p.AccountID, eventType, payload)
}

// Get returns one payment of the account.
func (s *Service) Get(ctx context.Context, accountID, id string) (db.Payment, error) {
	p, found, err := s.reads.Get(ctx, paymentKey{accountID, id})
	return p, readError(id, found, err)
}

// Version is the payment's current version, without the rest of the row.
func (s *Service) Version(ctx context.Context, accountID, id string) (int32, error) {
	v, found, err := s.versions.Get(ctx, paymentKey{accountID, id})
	return v.Version, readError(id, found, err)
}

// readError is the error of a read of payment id: err, or not found when the read found none.
func readError(id string, found bool, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("get payment %s: %w", id, db.Translate(err))
	case !found:
		return fmt.Errorf("get payment %s: %w", id, domain.ErrNotFound)
	}
	return nil
}

// ListParams filters and pages a list.
type ListParams struct {
	db.Page
	Status     *string
	CreatedGte *time.Time
	CreatedLt  *time.Time
}

// List returns one page, newest first, and whether another page follows.
func (s *Service) List(ctx context.Context, accountID string, p ListParams) ([]db.Payment, bool, error) {
	q := db.Reads(s.pool)
	createdAt := func(id string) (time.Time, error) {
		cursor, err := q.PaymentGetByID(ctx, db.PaymentGetByIDParams{AccountID: accountID, ID: id})
		return cursor.CreatedAt, err
	}
	return db.ListPage(p.Page, "payment", createdAt, func(after db.After, rowLimit int32) ([]db.Payment, error) {
		args := db.PaymentListParams{AccountID: accountID, RowLimit: rowLimit}
		if p.CreatedGte != nil {
			gte := db.RangeBound(*p.CreatedGte)
			args.CreatedGte = &gte
		}
		args.BeforeCreatedAt, args.BeforeID = upperBound(after, p.CreatedLt)
		return listPayments(ctx, q, args, p.Status)
	})
}

// upperBound is where a page of payments ends: before created_lt or before the cursor,
// whichever comes first in the list, since the query takes one upper bound (see
// PaymentList). Nil, nil is no bound.
func upperBound(after db.After, createdLt *time.Time) (*time.Time, *string) {
	if createdLt == nil {
		return after.CreatedAt, after.ID
	}
	lt, none := db.RangeBound(*createdLt), ""
	if after.CreatedAt != nil && after.CreatedAt.Before(lt) {
		return after.CreatedAt, after.ID
	}
	return &lt, &none
}

// listPayments reads a page with PaymentList, or with PaymentListByStatus for one status:
// each is one range of its own index, so the page's scan starts at the cursor and reads only
// the page, however many payments the account holds.
func listPayments(ctx context.Context, q *db.Queries, args db.PaymentListParams, status *string) ([]db.Payment, error) {
	if status == nil {
		return q.PaymentList(ctx, args)
	}
	return q.PaymentListByStatus(ctx, db.PaymentListByStatusParams{
		AccountID: args.AccountID, Status: *status, CreatedGte: args.CreatedGte,
		BeforeCreatedAt: args.BeforeCreatedAt, BeforeID: args.BeforeID, RowLimit: args.RowLimit,
	})
}
