package webhooks

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// DisableAfter is how long an endpoint may fail every attempt before it is disabled.
const DisableAfter = 5 * 24 * time.Hour

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
)

// Deliverer makes delivery attempts: the body of the delivery job. Scheduling the next
// attempt at the time it returns is the job runner's part.
type Deliverer struct {
	pool     *pgxpool.Pool
	sender   *Sender
	schedule Schedule
	observer Observer
	logger   *slog.Logger
}

// Observer is told of every attempt, and of every delivery an attempt ended: *metrics.Metrics
// is one.
type Observer interface {
	// WebhookDelivered records one attempt: outcome is "succeeded" (a 2xx), "failed"
	// (another status) or "error" (no answer: a timeout, a refused connection or address).
	WebhookDelivered(outcome string, d time.Duration)
	// WebhookDeliveryEnded records a delivery ended by its attempt: "succeeded", "failed"
	// (its retries used up, or refused) or "endpoint_disabled".
	WebhookDeliveryEnded(outcome string)
}

// NewDeliverer sends with sender and spaces retries by schedule, and logs what went wrong
// (logAttempt) to logger; nil logs nothing.
func NewDeliverer(pool *pgxpool.Pool, sender *Sender, schedule Schedule, logger *slog.Logger) *Deliverer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Deliverer{pool: pool, sender: sender, schedule: schedule, logger: logger}
}

// WithObserver returns a copy of d that reports every attempt to o; d itself is not changed.
// A nil o reports to no one.
func (d *Deliverer) WithObserver(o Observer) *Deliverer {
	cp := *d
	cp.observer = o
	return &cp
}

// dueSlack is how early an attempt may start before its delivery's next_attempt_at: the job
// that runs it is scheduled for that time, by a clock that may differ slightly.
const dueSlack = 500 * time.Millisecond

// EndJob ends the job that runs a delivery, inside the transaction that decides what follows
// its run: with next nil the delivery is over; with a time, the job that makes the attempt
// then takes its place (Worker.Work). A nil EndJob ends nothing: tests make attempts without
// a job.
type EndJob func(ctx context.Context, tx db.Tx, next *time.Time) error

// Attempt makes the next attempt of a delivery and records it. It returns when the attempt
// after it is due, or nil when the delivery is over (succeeded, failed, gone or deleted),
// having called end with that time in the transaction that decided it. No transaction is
// open while the receiver is called.
func (d *Deliverer) Attempt(ctx context.Context, accountID, deliveryID string, end EndJob) (*time.Time, error) {
	t, err := d.load(ctx, accountID, deliveryID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil, nil // deleted with its endpoint
	}
	if err != nil {
		return nil, err
	}
	delivery, endpoint := t.delivery, t.endpoint
	now := time.Now()
	notDue := delivery.NextAttemptAt != nil && delivery.NextAttemptAt.After(now.Add(dueSlack))
	if delivery.Status != StatusPending || endpoint.DisabledReason != nil || notDue {
		// Over, its endpoint disabled, or not due yet (a job run again after its process
		// died just after recording the previous attempt): no attempt now.
		return d.finish(ctx, delivery, endpoint.DisabledReason != nil, end)
	}
	body, err := Payload(t.event)
	if err != nil {
		return nil, err
	}
	res := d.sender.Send(ctx, Message{
		URL: endpoint.Url, ID: delivery.ID, Body: body, Secrets: SigningSecrets(endpoint, now),
		EndpointID: endpoint.ID, Attempt: int(delivery.AttemptCount) + 1,
	}, now)
	d.observe(res)
	// Recorded even when the job's context ended while the request was out (the process
	// stopping): the receiver may have had it, and the attempts must say so, as the metrics
	// and the span do. The record is bounded on its own.
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordWithin)
	defer cancel()
	var (
		next *time.Time
		fate attemptFate
	)
	err = db.InTx(recordCtx, d.pool, func(tx db.Tx) error {
		next, err = d.record(recordCtx, tx, delivery, now, res, end, &fate)
		return err
	})
	if err == nil {
		d.logAttempt(ctx, delivery, res, fate, next)
		d.observeEnd(fate)
	}
	return next, err
}

// attemptFate is what record decided an attempt meant: the delivery's status after it, and
// whether its endpoint was disabled by it.
type attemptFate struct {
	status   string
	disabled bool
}

// logAttempt logs an attempt that went wrong, once it is recorded, so that "we never got the
// webhook" can be answered from the log as from the attempts' list: a failed attempt at
// info, with its delivery, endpoint, number, status and reason; a delivery that gives up, or
// an endpoint disabled, at warn. A delivered attempt logs nothing: the metrics count those.
func (d *Deliverer) logAttempt(ctx context.Context, seen db.WebhookDelivery, res Result, fate attemptFate, next *time.Time) {
	if res.Outcome == Delivered {
		return
	}
	attrs := []any{
		slog.String("delivery", seen.ID), slog.String("endpoint", seen.EndpointID), slog.String("account", seen.AccountID),
		slog.Int("attempt", int(seen.AttemptCount)+1), slog.String("error", res.Error),
	}
	if res.Status != 0 {
		attrs = append(attrs, slog.Int("status", res.Status))
	}
	if next != nil {
		attrs = append(attrs, slog.Time("next_attempt_at", *next))
	}
	if sc := oteltrace.SpanContextFromContext(ctx); sc.IsValid() {
		attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
	}
	d.logger.InfoContext(ctx, "webhook attempt failed", attrs...)
	if fate.disabled {
		d.logger.WarnContext(ctx, "webhook endpoint disabled", attrs...)
	} else if fate.status == StatusFailed {
		d.logger.WarnContext(ctx, "webhook delivery failed", attrs...)
	}
}

// recordWithin bounds the transaction that records an attempt once it has been made.
const recordWithin = 10 * time.Second

// finish ends the job of a delivery that needs no attempt now: it is over, its endpoint is
// disabled (it then fails), or its next attempt is not due. It decides on the delivery's
// row, locked: a pending delivery (redelivered since the row was read, or waiting) gets the
// job for its next attempt, whose time is returned. Ended in the same transaction, the job
// can never look alive to a redelivery that commits after: that one finds the delivery's
// next job, or none, and makes it due.
func (d *Deliverer) finish(ctx context.Context, seen db.WebhookDelivery, disabled bool, end EndJob) (*time.Time, error) {
	var next *time.Time
	err := db.InTx(ctx, d.pool, func(tx db.Tx) error {
		current, err := tx.WebhookDeliveryLock(ctx, db.WebhookDeliveryLockParams{AccountID: seen.AccountID, ID: seen.ID})
		if err != nil {
			return fmt.Errorf("lock delivery %s: %w", seen.ID, db.Translate(err))
		}
		if current.Status == StatusPending && disabled {
			// The endpoint was disabled when it was read; a redelivery needs it enabled again.
			endpoint, err := tx.WebhookEndpointGetByID(ctx, db.WebhookEndpointGetByIDParams{AccountID: seen.AccountID, ID: seen.EndpointID})
			if err != nil {
				return fmt.Errorf("load endpoint of %s: %w", seen.ID, db.Translate(err))
			}
			disabled = endpoint.DisabledReason != nil
		}
		switch {
		case current.Status == StatusPending && !disabled:
			next = cmp.Or(current.NextAttemptAt, new(time.Now()))
		case current.Status == StatusPending:
			fail := db.WebhookDeliveryFailParams{AccountID: seen.AccountID, ID: seen.ID}
			if err := tx.WebhookDeliveryFail(ctx, fail); err != nil {
				return fmt.Errorf("fail delivery %s: %w", seen.ID, err)
			}
		}
		return endJob(ctx, tx, end, next)
	})
	if errors.Is(err, domain.ErrNotFound) {
		return nil, nil // deleted with its endpoint meanwhile
	}
	return next, err
}

func endJob(ctx context.Context, tx db.Tx, end EndJob, next *time.Time) error {
	if end == nil {
		return nil
	}
	return end(ctx, tx, next)
}

// target is what an attempt needs: the delivery, where it goes and what it sends.
type target struct {
	delivery db.WebhookDelivery
	endpoint db.WebhookEndpoint
	event    db.Event
}

// load reads an attempt's target without a lock (no transaction is open while the receiver
// is called: record checks what moved meanwhile). Three
// lookups by primary key rather than one join, whose generic plan could read all the
// account's endpoints and events (see WebhookDeliveryListByEndpoint). An error wraps
// domain.ErrNotFound when the delivery or its endpoint is gone.
func (d *Deliverer) load(ctx context.Context, accountID, deliveryID string) (target, error) {
	q := db.New(d.pool)
	delivery, err := q.WebhookDeliveryGetByID(ctx, db.WebhookDeliveryGetByIDParams{AccountID: accountID, ID: deliveryID})
	if err != nil {
		return target{}, fmt.Errorf("load delivery %s: %w", deliveryID, db.Translate(err))
	}
	endpoint, err := q.WebhookEndpointGetByID(ctx, db.WebhookEndpointGetByIDParams{
		AccountID: accountID, ID: delivery.EndpointID,
	})
	if err != nil {
		return target{}, fmt.Errorf("load endpoint of %s: %w", deliveryID, db.Translate(err))
	}
	event, err := q.EventGetByID(ctx, db.EventGetByIDParams{AccountID: accountID, ID: delivery.EventID})
	if err != nil {
		return target{}, fmt.Errorf("load event of %s: %w", deliveryID, db.Translate(err))
	}
	return target{delivery: delivery, endpoint: endpoint, event: event}, nil
}

// observe reports an attempt's outcome to the observer, if any.
func (d *Deliverer) observe(res Result) {
	if d.observer == nil {
		return
	}
	outcome := "error"
	switch {
	case res.Outcome == Delivered:
		outcome = "succeeded"
	case res.Status != 0:
		outcome = "failed"
	}
	d.observer.WebhookDelivered(outcome, res.Duration)
}

// observeEnd reports a delivery that its attempt ended to the observer, if any.
func (d *Deliverer) observeEnd(fate attemptFate) {
	switch {
	case d.observer == nil:
	case fate.disabled:
		d.observer.WebhookDeliveryEnded("endpoint_disabled")
	case fate.status == StatusSucceeded, fate.status == StatusFailed:
		d.observer.WebhookDeliveryEnded(fate.status)
	}
}

// record writes the attempt and what follows from it, in one transaction, against the
// delivery's row as it is now (locked): the attempt was made from a copy read before it.
func (d *Deliverer) record(ctx context.Context, tx db.Tx, seen db.WebhookDelivery, now time.Time, res Result, end EndJob, fate *attemptFate) (*time.Time, error) {
	current, err := tx.WebhookDeliveryLock(ctx, db.WebhookDeliveryLockParams{AccountID: seen.AccountID, ID: seen.ID})
	if errors.Is(db.Translate(err), domain.ErrNotFound) {
		return nil, nil // deleted with its endpoint while the attempt was in flight
	}
	if err != nil {
		return nil, fmt.Errorf("lock delivery %s: %w", seen.ID, err)
	}
	if current.AttemptCount != seen.AttemptCount {
		// Another run of the job made and recorded this attempt: it decides what follows.
		// Waiting on the row above, rather than on the attempt's key below, ends this one here.
		return nil, errAttemptRaced
	}
	var (
		status   string
		next     *time.Time
		disabled bool
	)
	if current.Status == StatusPending {
		// Decided from the row as it is now, not as it was read: after a redelivery that
		// committed while the attempt was in flight, the schedule starts again, and the
		// attempt counts as the redelivery's first (POST /events/{id}/redeliver says so).
		// Decided from the copy, a failure of the old schedule's last attempt would fail
		// the delivery, and the redelivery answered 202 would never be sent.
		if status, next, disabled, err = d.outcome(ctx, tx, current, now, res); err != nil {
			return nil, err
		}
		err = tx.WebhookDeliveryRecordAttempt(ctx, db.WebhookDeliveryRecordAttemptParams{
			Status: status, NextAttemptAt: next, AccountID: seen.AccountID, ID: seen.ID,
		})
	} else {
		// Ended while the attempt was in flight (its endpoint was disabled): the attempt is
		// counted and decides nothing.
		err = tx.WebhookDeliveryCountAttempt(ctx, db.WebhookDeliveryCountAttemptParams{AccountID: seen.AccountID, ID: seen.ID})
	}
	if err != nil {
		return nil, fmt.Errorf("update delivery %s: %w", seen.ID, err)
	}
	attempt := db.WebhookAttemptInsertParams{
		AccountID:   seen.AccountID,
		DeliveryID:  seen.ID,
		Attempt:     seen.AttemptCount + 1,
		AttemptedAt: now,
		DurationMs:  int32(res.Duration.Milliseconds()),
	}
	if res.Status != 0 {
		attempt.ResponseStatus = new(int32(res.Status))
	}
	if res.Error != "" {
		attempt.Error = &res.Error
	}
	if err := tx.WebhookAttemptInsert(ctx, attempt); err != nil {
		return nil, fmt.Errorf("record attempt %d of %s: %w", attempt.Attempt, seen.ID, err)
	}
	*fate = attemptFate{status: status, disabled: disabled}
	if disabled { // a disabled endpoint is sent nothing more
		pending := db.WebhookDeliveryFailPendingByEndpointParams{AccountID: seen.AccountID, EndpointID: seen.EndpointID}
		if err := tx.WebhookDeliveryFailPendingByEndpoint(ctx, pending); err != nil {
			return nil, fmt.Errorf("end pending deliveries of %s: %w", seen.EndpointID, err)
		}
	}
	return next, endJob(ctx, tx, end, next)
}

// errAttemptRaced rolls back an attempt recorded after another run recorded the same one.
var errAttemptRaced = errors.New("another attempt of the delivery was recorded first")

// outcome decides the delivery's status after an attempt, and updates its endpoint: a
// success clears its failure streak, 410 disables it, a failure extends the streak and
// disables it after DisableAfter. disabled reports that the endpoint was just disabled.
func (d *Deliverer) outcome(ctx context.Context, tx db.Tx, delivery db.WebhookDelivery, now time.Time, res Result) (status string, next *time.Time, disabled bool, err error) {
	switch res.Outcome {
	case Delivered:
		endpoint := db.WebhookEndpointRecordSuccessParams{AccountID: delivery.AccountID, ID: delivery.EndpointID}
		return StatusSucceeded, nil, false, tx.WebhookEndpointRecordSuccess(ctx, endpoint)
	case Gone:
		endpoint := db.WebhookEndpointDisableGoneParams{AccountID: delivery.AccountID, ID: delivery.EndpointID}
		return StatusFailed, nil, true, tx.WebhookEndpointDisableGone(ctx, endpoint)
	}
	reason, err := tx.WebhookEndpointRecordFailure(ctx, db.WebhookEndpointRecordFailureParams{
		Now: &now, DisableIfFailingSince: new(now.Add(-DisableAfter)), AccountID: delivery.AccountID, ID: delivery.EndpointID,
	})
	if err != nil {
		return "", nil, false, fmt.Errorf("record failure of %s: %w", delivery.EndpointID, err)
	}
	if reason != nil {
		return StatusFailed, nil, true, nil
	}
	if res.Outcome == Refused {
		return StatusFailed, nil, false, nil
	}
	at, ok := d.schedule.Next(now, int(delivery.RoundAttempts)+1, res.RetryAfter)
	if !ok {
		return StatusFailed, nil, false, nil
	}
	return StatusPending, &at, false, nil
}

// Payload is the body sent for an event, {"type", "timestamp", "data"}, the same bytes on
// every attempt: built from the stored event alone.
func Payload(e db.Event) ([]byte, error) {
	body, err := json.Marshal(struct {
		Type      string          `json:"type"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{e.Type, e.CreatedAt.UTC(), e.Data})
	if err != nil {
		return nil, fmt.Errorf("encode event %s: %w", e.ID, err)
	}
	return body, nil
}
