package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/idempotency"
)

// storedResponse writes a response that was serialised once, inside the transaction that
// stored it: how idempotent operations answer, so a replay is byte for byte the original.
type storedResponse idempotency.Response

func (r storedResponse) write(w http.ResponseWriter) error {
	for k, v := range r.Header {
		w.Header().Set(k, v)
	}
	if r.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(r.Status)
	_, err := w.Write(r.Body)
	return err
}

// idempotent runs op, the effect of an operation that takes an Idempotency-Key optionally,
// in one transaction. With a key it runs as the operations that require one do (Store.Do):
// the key claimed in op's transaction, the response stored with its effect, and a retry
// answered from it. Without one, op runs alone, and a retry runs it again. request is what
// the key fingerprints: the body, or the path's id and the body (idempotency.OnResource).
func (s *Server) idempotent(ctx context.Context, operation string, key *string, request any, op func(tx db.Tx) (idempotency.Response, error)) (storedResponse, error) {
	if key == nil {
		var res idempotency.Response
		err := db.InTx(ctx, s.pool, func(tx db.Tx) error {
			var err error
			res, err = op(tx)
			return err
		})
		return storedResponse(res), err
	}
	idem, err := idempotency.NewRequest(accountFrom(ctx).ID, operation, *key, request)
	if err != nil {
		return storedResponse{}, err
	}
	res, err := s.idempotency.Do(ctx, idem, op)
	return storedResponse(res), err
}

// idempotentChecked is idempotent for an operation whose input was checked ahead of its
// transaction by a check whose answer may change (a webhook URL's host may resolve elsewhere
// tomorrow, a redeploy may close private networks): refusal is that check's error. The
// refusal is answered from inside the transaction, after the key's replay, so a retry of a
// request that succeeded replays its answer whatever the check says now, and a new key is
// refused and left unused.
func (s *Server) idempotentChecked(ctx context.Context, operation string, key *string, request any, refusal error, op func(tx db.Tx) (idempotency.Response, error)) (storedResponse, error) {
	switch {
	case refusal == nil:
		return s.idempotent(ctx, operation, key, request, op)
	case key == nil: // nothing to replay
		return storedResponse{}, refusal
	}
	return s.idempotent(ctx, operation, key, request, func(db.Tx) (idempotency.Response, error) {
		return idempotency.Response{}, refusal
	})
}

// jsonResponse serialises v once, for storing and sending, with its resource headers. It
// encodes as the generated handlers do (json.Encoder: a trailing newline), so a created
// resource, its replay and a later GET of it are written alike.
func jsonResponse(status int, v any, headers map[string]string) (idempotency.Response, error) {
	var body bytes.Buffer
	if err := json.NewEncoder(&body).Encode(v); err != nil {
		return idempotency.Response{}, err
	}
	headers["Content-Type"] = "application/json"
	return idempotency.Response{Status: status, Header: headers, Body: body.Bytes()}, nil
}

// VisitCreatePaymentResponse lets the generated strict handler write it.
func (r storedResponse) VisitCreatePaymentResponse(w http.ResponseWriter) error { return r.write(w) }

// VisitCreateRefundResponse lets the generated strict handler write it.
func (r storedResponse) VisitCreateRefundResponse(w http.ResponseWriter) error { return r.write(w) }

// VisitCreateReportResponse lets the generated strict handler write it.
func (r storedResponse) VisitCreateReportResponse(w http.ResponseWriter) error { return r.write(w) }

// VisitUpdatePaymentResponse lets the generated strict handler write it.
func (r storedResponse) VisitUpdatePaymentResponse(w http.ResponseWriter) error { return r.write(w) }

// VisitCreateWebhookEndpointResponse lets the generated strict handler write it.
func (r storedResponse) VisitCreateWebhookEndpointResponse(w http.ResponseWriter) error {
	return r.write(w)
}

// VisitUpdateWebhookEndpointResponse lets the generated strict handler write it.
func (r storedResponse) VisitUpdateWebhookEndpointResponse(w http.ResponseWriter) error {
	return r.write(w)
}

// VisitRotateWebhookEndpointSecretResponse lets the generated strict handler write it.
func (r storedResponse) VisitRotateWebhookEndpointSecretResponse(w http.ResponseWriter) error {
	return r.write(w)
}

// VisitRedeliverEventResponse lets the generated strict handler write it.
func (r storedResponse) VisitRedeliverEventResponse(w http.ResponseWriter) error { return r.write(w) }
