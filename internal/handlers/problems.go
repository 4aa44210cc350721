package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"strings"

	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/contract"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/reports"
)

// problemType is one RFC 9457 problem type. Every type the server sends is in problemTypes,
// is listed in api/openapi.yaml, and is served as a page at GET /problems/{slug}.
type problemType struct {
	Slug        string
	Status      int
	Title       string
	Description string
}

// URI is the problem's `type` member: relative, resolved against the API's base URL.
func (t problemType) URI() string { return "/problems/" + t.Slug }

var (
	probInvalidRequest = problemType{"invalid-request", http.StatusBadRequest, "Invalid request",
		"The request is malformed or fails validation. The errors member names each invalid field (at most 20; errors_omitted counts the rest), as a JSON pointer into the body or the name of a parameter or header."}
	probInvalidIdempotencyKey = problemType{"invalid-idempotency-key", http.StatusBadRequest, "Invalid Idempotency-Key",
		"The Idempotency-Key header is missing where the operation requires it, or it is empty, longer than 255 characters or not printable ASCII. The errors member names the header and says what is wrong with it."}
	probUnauthorized = problemType{"unauthorized", http.StatusUnauthorized, "Unauthorized",
		"Send a valid API key as Authorization: Bearer <key>, in one Authorization field. The key was missing, unknown or revoked, or the request had two Authorization fields."}
	probNotFound = problemType{"not-found", http.StatusNotFound, "Not found",
		"There is no such resource in your account, or no such route."}
	probMethodNotAllowed = problemType{"method-not-allowed", http.StatusMethodNotAllowed, "Method not allowed",
		"The route exists but does not support this method. The Allow header lists the methods it does support."}
	probPayloadTooLarge = problemType{"payload-too-large", http.StatusRequestEntityTooLarge, "Payload too large",
		"The request body is larger than the server accepts."}
	probUnsupportedMediaType = problemType{"unsupported-media-type", http.StatusUnsupportedMediaType, "Unsupported media type",
		"The request body's Content-Type is not one this operation accepts (application/json; PATCH also takes application/merge-patch+json), names a charset other than UTF-8, or the body is sent with a Content-Encoding (such as gzip), which the server does not decode."}
	probPaymentDeclined = problemType{"payment-declined", http.StatusPaymentRequired, "Payment declined",
		"The card was declined. The payment is stored with status failed; payment_id and failure_code say which payment and why. The response is stored under the Idempotency-Key and replayed like any other."}
	probIdempotencyKeyInUse = problemType{"idempotency-key-in-use", http.StatusConflict, "Idempotency-Key in use",
		"A request with this Idempotency-Key is still being processed. Retry after the number of seconds in Retry-After to get its result."}
	probIdempotencyKeyReused = problemType{"idempotency-key-reused", http.StatusUnprocessableEntity, "Idempotency-Key reused",
		"This Idempotency-Key was first used with a different request body. Use a new key for a new request."}
	probPreconditionFailed = problemType{"precondition-failed", http.StatusPreconditionFailed, "Precondition failed",
		"The If-Match header does not match the resource's current ETag: someone changed it since you read it. current_etag has the current one; re-read the resource and decide again."}
	probPreconditionRequired = problemType{"precondition-required", http.StatusPreconditionRequired, "Precondition required",
		"This update requires an If-Match header with the ETag you last read, so that it cannot overwrite a change you have not seen."}
	probProcessorUnavailable = problemType{"processor-unavailable", http.StatusServiceUnavailable, "Processor unavailable",
		"The card processor failed like an outage. Nothing was stored and the Idempotency-Key was not used up: retry with the same key after Retry-After seconds."}
	probRefundExceedsPayment = problemType{"refund-exceeds-payment", http.StatusUnprocessableEntity, "Refund exceeds payment",
		"The refund is larger than what is left of the payment. amount_refundable says how much can still be refunded."}
	probPaymentNotRefundable = problemType{"payment-not-refundable", http.StatusConflict, "Payment not refundable",
		"The payment failed, so it captured nothing that could be refunded. payment_id names it."}
	probRateLimited = problemType{"rate-limited", http.StatusTooManyRequests, "Too many requests",
		"A rate-limit quota is used up: the account's default or writes quota, or the client address's unauthenticated quota (for requests that fail authentication) or test_accounts quota (for POST /test/accounts). violated_policies names it. Retry after the number of seconds in Retry-After; RateLimit and RateLimit-Policy give every quota's state."}
	probJobNotCancelable = problemType{"job-not-cancelable", http.StatusConflict, "Job not cancelable",
		"The job already finished (it succeeded, failed or was canceled), so there is nothing left to cancel."}
	// probJobFailed is never a response: it is the error member of a failed job.
	probJobFailed = problemType{strings.TrimPrefix(reports.JobFailedProblemType, "/problems/"), http.StatusInternalServerError, "Job failed",
		"The job failed after all its attempts; its detail says why. Nothing was kept: request a new report."}
	probWebhookEndpointDisabled = problemType{"webhook-endpoint-disabled", http.StatusConflict, "Webhook endpoint disabled",
		"The webhook endpoint is disabled, so nothing is sent to it. endpoint_id names it; enable it with PATCH (disabled: false) first."}
	probInternal = problemType{"internal-error", http.StatusInternalServerError, "Internal error",
		"Something failed on our side. Nothing about it is exposed here; the Request-Id finds it in the server's logs."}
	probServiceUnavailable = problemType{"service-unavailable", http.StatusServiceUnavailable, "Service unavailable",
		"The database could not be reached or did not answer within the request's deadline, or the server is shutting down. Retry after the number of seconds in Retry-After. A POST may have taken effect before the failure: retry it with the same Idempotency-Key, which replays the result if it did."}
)

var problemTypes = indexProblemTypes(
	probInvalidRequest, probInvalidIdempotencyKey, probUnauthorized, probNotFound,
	probMethodNotAllowed, probPayloadTooLarge, probUnsupportedMediaType, probInternal,
	probServiceUnavailable, probPaymentDeclined, probIdempotencyKeyInUse, probIdempotencyKeyReused,
	probPreconditionFailed, probPreconditionRequired, probProcessorUnavailable,
	probRefundExceedsPayment, probPaymentNotRefundable, probRateLimited,
	probWebhookEndpointDisabled, probJobNotCancelable, probJobFailed,
)

func indexProblemTypes(types ...problemType) map[string]problemType {
	m := make(map[string]problemType, len(types))
	for _, t := range types {
		m[t.Slug] = t
	}
	return m
}

// fieldError is one entry of an invalid-request problem's errors member: the contract's own.
type fieldError = contract.FieldError

// problem is an RFC 9457 problem details body plus the extension members this API uses.
// Headers are response headers that belong with it (Retry-After, WWW-Authenticate); a 412
// carries the current tag in its body, as current_etag, not as an ETag header.
type problem struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Status    int          `json:"status"`
	Detail    string       `json:"detail"`
	Instance  string       `json:"instance,omitempty"`
	RequestID string       `json:"request_id,omitempty"`
	Errors    []fieldError `json:"errors,omitempty"`
	// ErrorsOmitted counts the field errors found beyond the ones Errors lists.
	ErrorsOmitted int `json:"errors_omitted,omitempty"`

	PaymentID   string `json:"payment_id,omitempty"`
	FailureCode string `json:"failure_code,omitempty"`
	CurrentETag string `json:"current_etag,omitempty"`
	// AmountRefundable is a pointer so that 0 ("nothing left") is sent, not omitted.
	AmountRefundable *int64 `json:"amount_refundable,omitempty"`
	EndpointID       string `json:"endpoint_id,omitempty"`
	// ViolatedPolicies names the rate-limit policies a 429 refused the request under.
	ViolatedPolicies []string `json:"violated_policies,omitempty"`

	Headers http.Header `json:"-"`
}

func newProblem(t problemType, detail string) *problem {
	return &problem{Type: t.URI(), Title: t.Title, Status: t.Status, Detail: detail, Headers: http.Header{}}
}

// body is the problem serialised as JSON.
func (p *problem) body() ([]byte, error) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false) // keep "<key>" readable; this is JSON, not HTML
	err := enc.Encode(p)
	return body.Bytes(), err
}

// write sends the problem as application/problem+json.
func (p *problem) write(w http.ResponseWriter) error {
	body, err := p.body()
	if err != nil {
		return err
	}
	for k, v := range p.Headers {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_, err = w.Write(body)
	return err
}

var problemPage = template.Must(template.New("problem").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title></head>
<body><h1>{{.Title}}</h1><p>HTTP status {{.Status}}.</p><p>{{.Description}}</p>
<p>The problem's <code>type</code> is <code>{{.URI}}</code>. See <a href="/openapi.yaml">the API contract</a>.</p></body></html>
`))

// GetProblemType makes every problem `type` URI resolve to a page a human can read.
func (s *Server) GetProblemType(ctx context.Context, req api.GetProblemTypeRequestObject) (api.GetProblemTypeResponseObject, error) {
	t, ok := problemTypes[req.Problem]
	if !ok {
		return nil, domain.ErrNotFound
	}
	var page bytes.Buffer
	if err := problemPage.Execute(&page, t); err != nil {
		return nil, err
	}
	return api.GetProblemType200TexthtmlResponse{Body: &page, ContentLength: int64(page.Len())}, nil
}
