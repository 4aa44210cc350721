package events

import (
	"context"
	"fmt"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
)

// fanOut writes one pending delivery of the event for every enabled endpoint of the account
// subscribed to its type, and enqueues their sending, in the event's transaction: a delivery
// and its queue entry exist only if the event does. An endpoint disabled now never receives
// this event, even once enabled again. An endpoint deleted after it was read gets no
// delivery (WebhookDeliveryInsertMany); its queue entry finds none and ends.
//
// The delivery rows wait for the commit's batch while the queue entries are inserted now:
// a worker cannot fetch an entry before the transaction commits, and then the rows commit
// with it, so the order inside the transaction does not matter. An account without
// subscribed endpoints pays for the lookup only, and nothing when its caller read the
// endpoints ahead (db.SubscribedEndpointsAhead).
func (o *Outbox) fanOut(ctx context.Context, tx db.Tx, accountID, eventID, eventType string) error {
	endpoints, err := tx.SubscribedEndpoints(ctx, db.WebhookEndpointListSubscribedParams{
		AccountID: accountID, Type: eventType,
	})
	if err != nil {
		return fmt.Errorf("find endpoints for %s: %w", eventType, err)
	}
	if len(endpoints) == 0 {
		return nil
	}
	ids := make([]string, len(endpoints))
	deliveries := make([]Delivery, len(endpoints))
	for i, endpoint := range endpoints {
		ids[i] = domain.NewID("msg")
		deliveries[i] = Delivery{AccountID: accountID, ID: ids[i], EndpointID: endpoint}
	}
	err = tx.Later.WebhookDeliveryInsertMany(ctx, db.WebhookDeliveryInsertManyParams{
		Ids: ids, AccountID: accountID, EndpointIds: endpoints, EventID: eventID,
	})
	if err != nil {
		return fmt.Errorf("queue deliveries of %s: %w", eventID, err)
	}
	if err := o.queue.EnqueueTx(ctx, tx, deliveries); err != nil {
		return fmt.Errorf("enqueue deliveries of %s: %w", eventID, err)
	}
	return nil
}
