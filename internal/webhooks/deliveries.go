package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/events"
)

// Delivery is one event sent to one endpoint, with its attempts, oldest first.
type Delivery struct {
	db.WebhookDelivery
	EventType string
	Attempts  []db.WebhookAttempt // the latest AttemptsShown, oldest first; AttemptCount counts all
}

// AttemptsShown is how many of a delivery's attempts it is read with, the latest: each
// redelivery adds to the same delivery's attempts, and a page of deliveries must not grow
// with them.
const AttemptsShown = 20

// ListDeliveries returns one page of an endpoint's deliveries, newest first, each with its
// attempts, and whether another page follows.
func (s *Service) ListDeliveries(ctx context.Context, accountID, endpointID string, p db.Page) ([]Delivery, bool, error) {
	if _, err := s.GetEndpoint(ctx, accountID, endpointID); err != nil {
		return nil, false, err
	}
	q := db.Reads(s.pool)
	createdAt := func(id string) (time.Time, error) {
		d, err := q.WebhookDeliveryGetByID(ctx, db.WebhookDeliveryGetByIDParams{AccountID: accountID, ID: id})
		if err == nil && d.EndpointID != endpointID {
			err = domain.ErrNotFound // another endpoint's delivery
		}
		return d.CreatedAt, err
	}
	rows, hasMore, err := db.ListPage(p, "delivery of this endpoint", createdAt, func(after db.After, rowLimit int32) ([]db.WebhookDeliveryListByEndpointRow, error) {
		return q.WebhookDeliveryListByEndpoint(ctx, db.WebhookDeliveryListByEndpointParams{
			AccountID: accountID, EndpointID: endpointID, AfterCreatedAt: after.CreatedAt, AfterID: after.ID, RowLimit: rowLimit,
		})
	})
	if err != nil {
		return nil, false, err
	}
	deliveries := make([]Delivery, len(rows))
	for i, r := range rows {
		deliveries[i] = Delivery{WebhookDelivery: r.WebhookDelivery, EventType: r.EventType}
	}
	return deliveries, hasMore, withAttempts(ctx, q, accountID, deliveries)
}

// withAttempts fills in the latest attempts of the account's deliveries with one query.
func withAttempts(ctx context.Context, q *db.Queries, accountID string, deliveries []Delivery) error {
	ids := make([]string, len(deliveries))
	byID := make(map[string]*Delivery, len(deliveries))
	for i := range deliveries {
		ids[i] = deliveries[i].ID
		deliveries[i].Attempts = []db.WebhookAttempt{}
		byID[deliveries[i].ID] = &deliveries[i]
	}
	page := db.WebhookAttemptListByDeliveriesParams{AccountID: accountID, DeliveryIds: ids, PerDelivery: AttemptsShown}
	attempts, err := q.WebhookAttemptListByDeliveries(ctx, page)
	if err != nil {
		return fmt.Errorf("list attempts: %w", err)
	}
	for _, a := range attempts {
		d := byID[a.DeliveryID]
		d.Attempts = append(d.Attempts, a)
	}
	return nil
}

// Redeliver queues an event again, now, with a fresh retry schedule: to endpointID when
// given, whatever its enabled events, otherwise to every enabled endpoint subscribed to the
// event's type. An endpoint's earlier delivery of the event keeps its webhook-id. It runs in
// tx (a request's, under its Idempotency-Key if it has one): the deliveries and their jobs
// commit with it.
func (s *Service) Redeliver(ctx context.Context, tx db.Tx, accountID, eventID string, endpointID *string) ([]Delivery, error) {
	event, err := tx.EventGetByID(ctx, db.EventGetByIDParams{AccountID: accountID, ID: eventID})
	if err != nil {
		return nil, fmt.Errorf("get event %s: %w", eventID, db.Translate(err))
	}
	endpoints, err := redeliveryTargets(ctx, tx, event, endpointID)
	if err != nil {
		return nil, err
	}
	queued := make([]Delivery, 0, len(endpoints))
	jobs := make([]events.Delivery, 0, len(endpoints))
	for _, id := range endpoints {
		d, err := tx.WebhookDeliveryRequeue(ctx, db.WebhookDeliveryRequeueParams{
			ID: domain.NewID("msg"), AccountID: accountID, EndpointID: id, EventID: eventID,
		})
		if err != nil {
			return nil, fmt.Errorf("requeue %s for %s: %w", eventID, id, err)
		}
		queued = append(queued, Delivery{WebhookDelivery: d, EventType: event.Type})
		jobs = append(jobs, events.Delivery{AccountID: accountID, ID: d.ID, EndpointID: d.EndpointID})
	}
	if len(jobs) > 0 {
		if err := s.queue.EnqueueTx(ctx, tx, jobs); err != nil {
			return nil, fmt.Errorf("enqueue redelivery of %s: %w", eventID, err)
		}
	}
	return queued, withAttempts(ctx, tx.Queries, accountID, queued)
}

// redeliveryTargets are the endpoints a redelivery goes to.
func redeliveryTargets(ctx context.Context, tx db.Tx, event db.Event, endpointID *string) ([]string, error) {
	if endpointID == nil {
		ids, err := tx.WebhookEndpointListSubscribed(ctx, db.WebhookEndpointListSubscribedParams{
			AccountID: event.AccountID, Type: event.Type,
		})
		if err != nil {
			return nil, fmt.Errorf("find endpoints for %s: %w", event.ID, err)
		}
		return ids, nil
	}
	e, err := tx.WebhookEndpointGetByID(ctx, db.WebhookEndpointGetByIDParams{AccountID: event.AccountID, ID: *endpointID})
	if err := db.NotFoundAsInvalid(err, "/endpoint_id", "no such webhook endpoint"); err != nil {
		return nil, err
	}
	if e.DisabledReason != nil {
		return nil, &domain.WebhookEndpointDisabledError{EndpointID: e.ID}
	}
	return []string{e.ID}, nil
}

// RetryNow makes every pending delivery of the account that waits for a later attempt due
// now (a test helper, so a test need not wait for the retry schedule), and reports how many.
// Each one's job, scheduled for the retry, is made due through the queue, as a redelivery's
// is: the unique insert finds the waiting job and makes it due now.
func (s *Service) RetryNow(ctx context.Context, accountID string) (int64, error) {
	var due int64
	err := db.InTx(ctx, s.pool, func(tx db.Tx) error {
		rows, err := tx.WebhookDeliveryRetryNowByAccount(ctx, accountID)
		if err != nil || len(rows) == 0 {
			return err
		}
		jobs := make([]events.Delivery, len(rows))
		for i, r := range rows {
			jobs[i] = events.Delivery{AccountID: accountID, ID: r.ID, EndpointID: r.EndpointID}
		}
		due = int64(len(rows))
		return s.queue.EnqueueTx(ctx, tx, jobs)
	})
	if err != nil {
		return 0, fmt.Errorf("make deliveries of %s due: %w", accountID, err)
	}
	return due, nil
}
