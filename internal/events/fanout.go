package events

import (
	"context"
	"fmt"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
)

// fanOut writes one pending delivery of the event for every enabled endpoint of the account
// subscribed to its type, in the event's transaction: a delivery exists if and only if its
// event does. An endpoint disabled now never receives this event, even once enabled again.
func fanOut(ctx context.Context, tx db.Tx, accountID, eventID, eventType string) error {
	endpoints, err := tx.WebhookEndpointListSubscribed(ctx, db.WebhookEndpointListSubscribedParams{
		AccountID: accountID, Type: eventType,
	})
	if err != nil {
		return fmt.Errorf("find endpoints for %s: %w", eventType, err)
	}
	if len(endpoints) == 0 {
		return nil
	}
	ids := make([]string, len(endpoints))
	for i := range ids {
		ids[i] = domain.NewID("msg")
	}
	err = tx.Later.WebhookDeliveryInsertMany(ctx, db.WebhookDeliveryInsertManyParams{
		Ids: ids, AccountID: accountID, EndpointIds: endpoints, EventID: eventID,
	})
	if err != nil {
		return fmt.Errorf("queue deliveries of %s: %w", eventID, err)
	}
	return nil
}
