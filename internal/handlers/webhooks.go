package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/oapi-codegen/nullable"
	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/webhooks"
)

// CreateWebhookEndpoint registers an endpoint; its secret is in this answer only, and in the
// answer stored under an Idempotency-Key (optional here), kept as long as the key.
func (s *Server) CreateWebhookEndpoint(ctx context.Context, req api.CreateWebhookEndpointRequestObject) (api.CreateWebhookEndpointResponseObject, error) {
	acct := accountFrom(ctx).ID
	params := webhooks.EndpointParams{
		URL:           req.Body.Url,
		EnabledEvents: eventNames(req.Body.EnabledEvents),
		Description:   req.Body.Description,
	}
	refusal := s.webhooks.CheckURL(ctx, params.URL)
	res, err := s.idempotentChecked(ctx, "webhook_endpoints.create", req.Params.IdempotencyKey, decodedBodyFrom(ctx), refusal,
		func(tx db.Tx) (idempotency.Response, error) {
			e, err := s.webhooks.CreateEndpoint(ctx, tx, acct, params)
			if err != nil {
				return idempotency.Response{}, err
			}
			return jsonResponse(http.StatusCreated, endpointWithSecret(e),
				map[string]string{"Location": "/webhook-endpoints/" + e.ID, "ETag": etag(e.Version)})
		})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// GetWebhookEndpoint returns an endpoint without its secret, or 304 when If-None-Match names
// its current ETag.
func (s *Server) GetWebhookEndpoint(ctx context.Context, req api.GetWebhookEndpointRequestObject) (api.GetWebhookEndpointResponseObject, error) {
	e, err := s.webhooks.GetEndpoint(ctx, accountFrom(ctx).ID, req.Id)
	if err != nil {
		return nil, err
	}
	if req.Params.IfMatch != nil {
		if err := readIfMatch(ctx, *req.Params.IfMatch, e.Version); err != nil {
			return nil, err
		}
	}
	if req.Params.IfNoneMatch != nil {
		match, err := checkIfNoneMatch(ctx, *req.Params.IfNoneMatch, e.Version)
		if err != nil {
			return nil, err
		}
		if match {
			return notModified(etag(e.Version)), nil
		}
	}
	return api.GetWebhookEndpoint200JSONResponse{Body: endpointResource(e), Headers: api.GetWebhookEndpoint200ResponseHeaders{ETag: etag(e.Version)}}, nil
}

// ListWebhookEndpoints pages through the account's endpoints, newest first.
func (s *Server) ListWebhookEndpoints(ctx context.Context, req api.ListWebhookEndpointsRequestObject) (api.ListWebhookEndpointsResponseObject, error) {
	rows, hasMore, err := s.webhooks.ListEndpoints(ctx, accountFrom(ctx).ID, s.page(req.Params.Limit, req.Params.StartingAfter))
	if err != nil {
		return nil, err
	}
	data := make([]api.WebhookEndpoint, len(rows))
	for i, e := range rows {
		data[i] = endpointResource(e)
	}
	return api.ListWebhookEndpoints200JSONResponse{Body: api.WebhookEndpointList{Data: data, HasMore: hasMore}}, nil
}

// UpdateWebhookEndpoint applies a merge patch under If-Match: 428 without it, 412 when stale.
// Under an Idempotency-Key (optional here) its 200 is stored with the update and replayed to
// a retry, whose If-Match is stale by then; a 412 or 428 commits nothing and leaves the key
// unused.
func (s *Server) UpdateWebhookEndpoint(ctx context.Context, req api.UpdateWebhookEndpointRequestObject) (api.UpdateWebhookEndpointResponseObject, error) {
	pre, err := requiredIfMatch(ctx, req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	body := req.ApplicationMergePatchPlusJSONBody
	if body == nil {
		body = (*api.UpdateWebhookEndpointApplicationMergePatchPlusJSONRequestBody)(req.JSONBody)
	}
	if body == nil { // the validator requires a body, so this is a binding gap: refuse, never no-op
		return nil, &domain.ValidationError{Field: "/", Message: "the body could not be read as a merge patch"}
	}
	patch := webhooks.EndpointPatch{URL: body.Url, Disabled: body.Disabled}
	if body.EnabledEvents != nil {
		patch.EnabledEvents = *body.EnabledEvents
	}
	if body.Description.IsSpecified() {
		patch.SetDescription = true
		if !body.Description.IsNull() {
			patch.Description = new(body.Description.MustGet())
		}
	}
	var refusal error
	if patch.URL != nil {
		refusal = s.webhooks.CheckURL(ctx, *patch.URL)
	}
	acct := accountFrom(ctx).ID
	res, err := s.idempotentChecked(ctx, "webhook_endpoints.update", req.Params.IdempotencyKey, idempotency.OnResource(req.Id, decodedBodyFrom(ctx)), refusal,
		func(tx db.Tx) (idempotency.Response, error) {
			e, err := s.webhooks.UpdateEndpoint(ctx, tx, acct, req.Id, pre, patch)
			if err := traceIfMatch(ctx, err); err != nil {
				return idempotency.Response{}, err
			}
			return jsonResponse(http.StatusOK, endpointResource(e), map[string]string{"ETag": etag(e.Version)})
		})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// DeleteWebhookEndpoint deletes an endpoint and its delivery history; under an If-Match
// (optional here), only while the endpoint is at that ETag, 412 otherwise (RFC 9110: a server
// that issues ETags evaluates the precondition it is sent).
func (s *Server) DeleteWebhookEndpoint(ctx context.Context, req api.DeleteWebhookEndpointRequestObject) (api.DeleteWebhookEndpointResponseObject, error) {
	pre, err := optionalIfMatch(req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	err = s.webhooks.DeleteEndpoint(ctx, accountFrom(ctx).ID, req.Id, pre)
	if pre != nil {
		err = traceIfMatch(ctx, err)
	}
	if err != nil {
		return nil, err
	}
	return api.DeleteWebhookEndpoint204Response{}, nil
}

// RotateWebhookEndpointSecret issues a new secret; the previous one signs beside it for 24 h.
// Under an Idempotency-Key (optional here) a retry gets the secret the rotation issued, where
// rotating again would retire the one it lost the answer of. Under an If-Match (optional
// too), only while the endpoint is at that ETag, 412 otherwise; the key is read first, so a
// retry replays though its If-Match is stale by then.
func (s *Server) RotateWebhookEndpointSecret(ctx context.Context, req api.RotateWebhookEndpointSecretRequestObject) (api.RotateWebhookEndpointSecretResponseObject, error) {
	pre, err := optionalIfMatch(req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	acct := accountFrom(ctx).ID
	res, err := s.idempotent(ctx, "webhook_endpoints.rotate_secret", req.Params.IdempotencyKey, idempotency.OnResource(req.Id, nil),
		func(tx db.Tx) (idempotency.Response, error) {
			e, err := s.webhooks.RotateSecret(ctx, tx, acct, req.Id, pre)
			if pre != nil {
				err = traceIfMatch(ctx, err)
			}
			if err != nil {
				return idempotency.Response{}, err
			}
			return jsonResponse(http.StatusOK, endpointWithSecret(e), map[string]string{"ETag": etag(e.Version)})
		})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// ListWebhookDeliveries pages through an endpoint's deliveries with their attempts.
func (s *Server) ListWebhookDeliveries(ctx context.Context, req api.ListWebhookDeliveriesRequestObject) (api.ListWebhookDeliveriesResponseObject, error) {
	rows, hasMore, err := s.webhooks.ListDeliveries(ctx, accountFrom(ctx).ID, req.Id, s.page(req.Params.Limit, req.Params.StartingAfter))
	if err != nil {
		return nil, err
	}
	return api.ListWebhookDeliveries200JSONResponse{Body: api.WebhookDeliveryList{Data: deliveryResources(rows), HasMore: hasMore}}, nil
}

// eventNames converts the generated enum type of enabled_events.
func eventNames[T ~string](events []T) []string {
	names := make([]string, len(events))
	for i, e := range events {
		names[i] = string(e)
	}
	return names
}

// endpointResource is the endpoint as the API shows it: never with its secrets.
func endpointResource(e db.WebhookEndpoint) api.WebhookEndpoint {
	res := api.WebhookEndpoint{
		Id:                      e.ID,
		Url:                     e.Url,
		Description:             nullableString(e.Description),
		EnabledEvents:           e.EnabledEvents,
		Disabled:                e.DisabledReason != nil,
		DisabledReason:          nullable.NewNullNullable[api.WebhookEndpointDisabledReason](),
		PreviousSecretExpiresAt: nullable.NewNullNullable[time.Time](),
		CreatedAt:               e.CreatedAt.UTC(),
		UpdatedAt:               e.UpdatedAt.UTC(),
	}
	if e.DisabledReason != nil {
		res.DisabledReason.Set(api.WebhookEndpointDisabledReason(*e.DisabledReason))
	}
	if e.PreviousSecretExpiresAt != nil && e.PreviousSecretExpiresAt.After(time.Now()) {
		res.PreviousSecretExpiresAt.Set(e.PreviousSecretExpiresAt.UTC())
	}
	return res
}

// endpointWithSecret is the answer to creation and rotation, the only ones with the secret.
func endpointWithSecret(e db.WebhookEndpoint) api.WebhookEndpointWithSecret {
	r := endpointResource(e)
	res := api.WebhookEndpointWithSecret{
		Id: r.Id, Url: r.Url, Description: r.Description, EnabledEvents: r.EnabledEvents,
		Disabled: r.Disabled, PreviousSecretExpiresAt: r.PreviousSecretExpiresAt,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Secret: e.Secret,
		DisabledReason: nullable.NewNullNullable[api.WebhookEndpointWithSecretDisabledReason](),
	}
	if e.DisabledReason != nil {
		res.DisabledReason.Set(api.WebhookEndpointWithSecretDisabledReason(*e.DisabledReason))
	}
	return res
}

func deliveryResources(rows []webhooks.Delivery) []api.WebhookDelivery {
	out := make([]api.WebhookDelivery, len(rows))
	for i, d := range rows {
		out[i] = api.WebhookDelivery{
			Id:            d.ID,
			EndpointId:    d.EndpointID,
			EventId:       d.EventID,
			EventType:     api.EventType(d.EventType),
			Status:        api.WebhookDeliveryStatus(d.Status),
			NextAttemptAt: nullable.NewNullNullable[time.Time](),
			AttemptCount:  int(d.AttemptCount),
			Attempts:      make([]api.WebhookAttempt, len(d.Attempts)),
			CreatedAt:     d.CreatedAt.UTC(),
			UpdatedAt:     d.UpdatedAt.UTC(),
		}
		if d.NextAttemptAt != nil {
			out[i].NextAttemptAt.Set(d.NextAttemptAt.UTC())
		}
		for j, a := range d.Attempts {
			out[i].Attempts[j] = attemptResource(a)
		}
	}
	return out
}

func attemptResource(a db.WebhookAttempt) api.WebhookAttempt {
	res := api.WebhookAttempt{
		Attempt:        int(a.Attempt),
		AttemptedAt:    a.AttemptedAt.UTC(),
		DurationMs:     int(a.DurationMs),
		ResponseStatus: nullable.NewNullNullable[int](),
		Error:          nullableString(a.Error),
	}
	if a.ResponseStatus != nil {
		res.ResponseStatus.Set(int(*a.ResponseStatus))
	}
	return res
}

// nullableString maps a nullable column to a member that is always present, null when unset.
func nullableString(v *string) nullable.Nullable[string] {
	if v == nil {
		return nullable.NewNullNullable[string]()
	}
	return nullable.NewNullableWithValue(*v)
}
