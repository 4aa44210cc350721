package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/domain"
)

// sentinelProblems maps each domain sentinel error to its problem type: the one table that
// decides what a failure looks like on the wire. retryAfter (seconds) is set where the client
// should come back later.
var sentinelProblems = []struct {
	err        error
	typ        problemType
	retryAfter string
}{
	{domain.ErrNotFound, probNotFound, ""},
	{domain.ErrIdempotencyKeyInUse, probIdempotencyKeyInUse, "1"},
	{domain.ErrIdempotencyKeyReused, probIdempotencyKeyReused, ""},
	{domain.ErrPreconditionRequired, probPreconditionRequired, ""},
	{domain.ErrProcessorUnavailable, probProcessorUnavailable, "1"},
}

// echoProblems maps the statuses echo and the validator produce for requests that never
// reached a handler (no route, wrong method, body too large, bad body).
var echoProblems = map[int]problemType{
	http.StatusBadRequest:            probInvalidRequest,
	http.StatusUnauthorized:          probUnauthorized,
	http.StatusNotFound:              probNotFound,
	http.StatusMethodNotAllowed:      probMethodNotAllowed,
	http.StatusRequestEntityTooLarge: probPayloadTooLarge,
	http.StatusUnsupportedMediaType:  probUnsupportedMediaType,
	http.StatusServiceUnavailable:    probServiceUnavailable,
}

// handleError is echo's HTTPErrorHandler: every error a handler or middleware returns ends
// here and leaves as a problem. Unknown errors are logged with the request id and become a
// generic 500 that leaks nothing.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	p := s.problemFor(c, err)
	p.Instance = c.Request().URL.Path
	p.RequestID = requestIDFrom(c.Request().Context())
	if writeErr := p.write(c.Response()); writeErr != nil {
		s.logger.ErrorContext(c.Request().Context(), "write problem", "error", writeErr, "request_id", p.RequestID)
	}
}

func (s *Server) problemFor(c echo.Context, err error) *problem {
	var (
		validation    *domain.ValidationError
		invalidKey    *domain.InvalidIdempotencyKeyError
		stale         *domain.PreconditionFailedError
		exceeds       *domain.RefundExceedsPaymentError
		notRefundable *domain.PaymentNotRefundableError
		requestErrs   *requestErrors
		httpErr       *echo.HTTPError
		ready         *problem
		typeErr       *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &ready):
		return ready
	case errors.As(err, &requestErrs):
		p := newProblem(probInvalidRequest, "The request does not match the API contract.")
		p.Errors = requestErrs.fields
		return p
	case errors.As(err, &validation):
		p := newProblem(probInvalidRequest, validation.Error())
		p.Errors = []fieldError{{Field: validation.Field, Message: validation.Message}}
		return p
	case errors.As(err, &invalidKey):
		return newProblem(probInvalidIdempotencyKey, invalidKey.Error())
	case errors.As(err, &stale):
		p := newProblem(probPreconditionFailed, "The payment changed since you read it.")
		p.CurrentETag = etag(stale.CurrentVersion)
		return p
	case errors.As(err, &exceeds):
		p := newProblem(probRefundExceedsPayment, fmt.Sprintf("Only %d of the payment can still be refunded.", exceeds.AmountRefundable))
		p.AmountRefundable = &exceeds.AmountRefundable
		return p
	case errors.As(err, &notRefundable):
		p := newProblem(probPaymentNotRefundable, notRefundable.Error()+".")
		p.PaymentID = notRefundable.PaymentID
		return p
	case errors.As(err, &typeErr):
		return bindingProblem(typeErr)
	case errors.As(err, &httpErr):
		if t, ok := echoProblems[httpErr.Code]; ok {
			return s.echoProblem(t, httpErr)
		}
	}
	for _, sp := range sentinelProblems {
		if errors.Is(err, sp.err) {
			p := newProblem(sp.typ, sp.typ.Description)
			if sp.retryAfter != "" {
				p.Headers.Set("Retry-After", sp.retryAfter)
			}
			return p
		}
	}
	s.logger.ErrorContext(c.Request().Context(), "internal error",
		"error", err, "request_id", requestIDFrom(c.Request().Context()))
	return newProblem(probInternal, "")
}

// bindingProblem is a body the schema accepts but Go cannot bind: in practice an integer
// written as 25e2 or 2500.0, which JSON Schema counts as an integer but the spec asks to
// send as a plain literal.
func bindingProblem(e *json.UnmarshalTypeError) *problem {
	p := newProblem(probInvalidRequest, "The request does not match the API contract.")
	msg := "got " + e.Value
	if strings.HasPrefix(e.Type.Kind().String(), "int") {
		msg = "write integers as plain literals (2500, not 2500.0 or 25e2); got " + e.Value
	}
	p.Errors = []fieldError{{Field: "/" + strings.ReplaceAll(e.Field, ".", "/"), Message: msg}}
	return p
}

// echoProblem renders one of echo's own errors. Its message is safe to show (echo writes it
// for clients), but its Internal error is not.
func (s *Server) echoProblem(t problemType, httpErr *echo.HTTPError) *problem {
	detail := t.Description
	if msg, ok := httpErr.Message.(string); ok && msg != http.StatusText(httpErr.Code) {
		detail = msg
	}
	p := newProblem(t, detail)
	switch t {
	case probUnauthorized:
		p.Headers.Set("WWW-Authenticate", `Bearer realm="payments-api"`)
	case probServiceUnavailable:
		p.Headers.Set("Retry-After", "1")
	}
	return p
}

// logPanic is the Recover middleware's hook: the stack goes to the log under the request id;
// the error goes on to handleError, which answers a bare 500.
func (s *Server) logPanic(c echo.Context, err error, stack []byte) error {
	s.logger.ErrorContext(c.Request().Context(), "panic",
		slog.String("error", err.Error()),
		slog.String("request_id", requestIDFrom(c.Request().Context())),
		slog.String("stack", string(stack)))
	return err
}
