package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/idempotency"
)

// GetEvent returns one event of the account.
func (s *Server) GetEvent(ctx context.Context, req api.GetEventRequestObject) (api.GetEventResponseObject, error) {
	e, err := s.events.Get(ctx, accountFrom(ctx).ID, req.Id)
	if err != nil {
		return nil, err
	}
	res, err := eventResource(e)
	if err != nil {
		return nil, err
	}
	return api.GetEvent200JSONResponse{Body: res}, nil
}

// ListEvents pages through the account's events, newest first, optionally of one type.
func (s *Server) ListEvents(ctx context.Context, req api.ListEventsRequestObject) (api.ListEventsResponseObject, error) {
	params := events.ListParams{Page: s.page(req.Params.Limit, req.Params.StartingAfter), Type: (*string)(req.Params.Type)}
	rows, hasMore, err := s.events.List(ctx, accountFrom(ctx).ID, params)
	if err != nil {
		return nil, err
	}
	data, err := resources(rows, eventResource)
	if err != nil {
		return nil, err
	}
	return api.ListEvents200JSONResponse{Body: api.EventList{Data: data, HasMore: hasMore}}, nil
}

// firstAttemptAfter is the Retry-After, in seconds, of a redelivery: its first attempts
// start within about a second.
const firstAttemptAfter = 1

// RedeliverEvent queues the event again for one endpoint or for every subscribed one. Like
// every 202, it says where to watch the work: the named endpoint's deliveries, or else the
// event, whose deliveries may go to several endpoints (each named in the body). Under an
// Idempotency-Key (optional here) the deliveries, their jobs and the 202 commit together, so
// a retry replays the 202 rather than send the event once more.
func (s *Server) RedeliverEvent(ctx context.Context, req api.RedeliverEventRequestObject) (api.RedeliverEventResponseObject, error) {
	var endpointID *string
	if req.Body != nil {
		endpointID = req.Body.EndpointId
	}
	acct := accountFrom(ctx).ID
	location := "/events/" + req.Id
	if endpointID != nil {
		location = "/webhook-endpoints/" + *endpointID + "/deliveries"
	}
	res, err := s.idempotent(ctx, "events.redeliver", req.Params.IdempotencyKey, idempotency.OnResource(req.Id, decodedBodyFrom(ctx)),
		func(tx db.Tx) (idempotency.Response, error) {
			queued, err := s.webhooks.Redeliver(ctx, tx, acct, req.Id, endpointID)
			if err != nil {
				return idempotency.Response{}, err
			}
			return jsonResponse(http.StatusAccepted, api.WebhookDeliveryBatch{Data: deliveryResources(queued)},
				map[string]string{"Location": location, "Retry-After": strconv.Itoa(firstAttemptAfter)})
		})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func eventResource(e db.Event) (api.Event, error) {
	res := api.Event{Id: e.ID, Type: api.EventType(e.Type), CreatedAt: e.CreatedAt.UTC()}
	if err := json.Unmarshal(e.Data, &res.Data); err != nil {
		return api.Event{}, fmt.Errorf("decode data of event %s: %w", e.ID, err)
	}
	return res, nil
}
