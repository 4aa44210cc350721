// Package events writes the transactional outbox: an event row committed in the same
// transaction as the change it describes, so an event exists if and only if the change does,
// with a delivery row for each webhook endpoint subscribed to it and the queue entry that
// will send it. Webhook workers send those later; nothing is sent from a request. Past
// their retention, events are deleted with their deliveries (Sweeper), unless one is still
// pending.
//
// It imports the database layer and the domain only. The queue it enqueues on is an
// interface (DeliveryQueue) that internal/app fills with the webhooks package's River
// queue, so no domain package that records events ever imports webhooks, River or net/http.
package events

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
)

// Event types, as listed in the spec's webhooks section.
const (
	PaymentSucceeded = "payment.succeeded"
	PaymentFailed    = "payment.failed"
	PaymentUpdated   = "payment.updated"
	RefundSucceeded  = "refund.succeeded"
	ReportSucceeded  = "report.succeeded"
	ReportFailed     = "report.failed"
)

// Delivery names one delivery row the fan-out wrote: what the queue needs to find it and
// send it, and to keep one endpoint's deliveries from holding every worker.
type Delivery struct {
	AccountID  string
	ID         string // the delivery's id, its webhook-id
	EndpointID string
}

// DeliveryQueue enqueues the sending of deliveries in tx, the transaction that writes them,
// so a delivery is queued if and only if it commits.
type DeliveryQueue interface {
	EnqueueTx(ctx context.Context, tx db.Tx, deliveries []Delivery) error
}

// Outbox records events and queues their deliveries.
type Outbox struct {
	queue DeliveryQueue
}

// NewOutbox queues deliveries on queue.
func NewOutbox(queue DeliveryQueue) *Outbox {
	return &Outbox{queue: queue}
}

// Record writes an event whose data is the resource as the API shows it. tx must be the
// transaction that makes the change. Nothing reads an event or its deliveries back in the
// transaction that writes them, so both inserts wait for the commit's round trip
// (db.Tx.Later), the deliveries queued after the event they reference.
func (o *Outbox) Record(ctx context.Context, tx db.Tx, accountID, eventType string, data any) error {
	payload, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", eventType, err)
	}
	return o.RecordEncoded(ctx, tx, accountID, eventType, payload)
}

// RecordEncoded is Record for data its caller has already encoded as JSON, so a resource
// that is also answered is encoded once. payload must not change until tx commits: its
// insert waits for the commit's round trip.
func (o *Outbox) RecordEncoded(ctx context.Context, tx db.Tx, accountID, eventType string, payload []byte) error {
	id := domain.NewID("evt")
	err := tx.Later.EventInsert(ctx, db.EventInsertParams{
		ID:        id,
		AccountID: accountID,
		Type:      eventType,
		Data:      payload,
	})
	if err != nil {
		return fmt.Errorf("record %s event: %w", eventType, err)
	}
	return o.fanOut(ctx, tx, accountID, id, eventType)
}
