// Package events writes the transactional outbox: an event row committed in the same
// transaction as the change it describes, so an event exists if and only if the change does,
// with a delivery row for each webhook endpoint subscribed to it. Webhook workers send those
// later; nothing is sent from a request. It imports the database layer and the domain only.
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

// Record writes an event whose data is the resource as the API shows it. tx must be the
// transaction that makes the change. Nothing reads an event or its deliveries back in the
// transaction that writes them, so both inserts wait for the commit's round trip
// (db.Tx.Later), the deliveries queued after the event they reference.
func Record(ctx context.Context, tx db.Tx, accountID, eventType string, data any) error {
	payload, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", eventType, err)
	}
	id := domain.NewID("evt")
	err = tx.Later.EventInsert(ctx, db.EventInsertParams{
		ID:        id,
		AccountID: accountID,
		Type:      eventType,
		Data:      payload,
	})
	if err != nil {
		return fmt.Errorf("record %s event: %w", eventType, err)
	}
	return fanOut(ctx, tx, accountID, id, eventType)
}
