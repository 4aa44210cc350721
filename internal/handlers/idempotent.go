package handlers

import (
	"bytes"
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
