package handlers

import (
	"encoding/json"
	"net/http"

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

// jsonResponse serialises v once, for storing and sending, with its resource headers.
func jsonResponse(status int, v any, headers map[string]string) (idempotency.Response, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return idempotency.Response{}, err
	}
	headers["Content-Type"] = "application/json"
	return idempotency.Response{Status: status, Header: headers, Body: body}, nil
}

// VisitCreatePaymentResponse lets the generated strict handler write it.
func (r storedResponse) VisitCreatePaymentResponse(w http.ResponseWriter) error { return r.write(w) }

// VisitCreateRefundResponse lets the generated strict handler write it.
func (r storedResponse) VisitCreateRefundResponse(w http.ResponseWriter) error { return r.write(w) }
