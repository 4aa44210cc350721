package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/contract"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
)

// errorProblems is the one table that decides what a failure looks like on the wire: each
// row recognises one kind of error (a domain sentinel, a typed domain error, the contract's,
// the HTTP layer's own, or echo's) and builds its problem. The first row that matches wins;
// an error no row matches is a 500. New kinds of failure join as rows; no problem is built
// anywhere else.
var errorProblems = []errorRule{
	sentinel(contract.ErrNoRoute, probNotFound, 0),
	typed(func(*contract.MethodNotAllowedError) *problem {
		return newProblem(probMethodNotAllowed, probMethodNotAllowed.Description) // Allow is set by requestError
	}),
	typed(func(e *contract.MediaTypeError) *problem { return newProblem(probUnsupportedMediaType, e.Detail) }),
	typed(func(e *contract.Error) *problem {
		p := newProblem(probInvalidRequest, e.Summary)
		p.Errors = e.Fields
		p.ErrorsOmitted = e.Omitted
		return p
	}),
	typed(func(e *domain.ValidationError) *problem {
		p := newProblem(probInvalidRequest, e.Error())
		p.Errors = []fieldError{{Field: e.Field, Message: e.Message}}
		return p
	}),
	typed(func(e *domain.InvalidIdempotencyKeyError) *problem {
		p := newProblem(probInvalidIdempotencyKey, e.Error())
		// Shaped as invalid-request's field errors, so that one routine reads every 400.
		p.Errors = []fieldError{{Field: "Idempotency-Key", Message: e.Reason}}
		return p
	}),
	typed(func(e *domain.PreconditionFailedError) *problem {
		p := newProblem(probPreconditionFailed, "The resource changed since you read it.")
		p.CurrentETag = etag(e.CurrentVersion)
		return p
	}),
	typed(func(e *staleTagError) *problem {
		p := newProblem(probPreconditionFailed, "If-Match names none of the resource's tags.")
		p.CurrentETag = e.current
		return p
	}),
	typed(func(e *domain.RefundExceedsPaymentError) *problem {
		detail := fmt.Sprintf("The refund exceeds what is left of the payment: %d can still be refunded.", e.AmountRefundable)
		if e.AmountRefundable == 0 {
			detail = "The payment is already fully refunded."
		}
		p := newProblem(probRefundExceedsPayment, detail)
		p.AmountRefundable = &e.AmountRefundable
		return p
	}),
	typed(func(e *domain.PaymentNotRefundableError) *problem {
		p := newProblem(probPaymentNotRefundable, e.Error()+".")
		p.PaymentID = e.PaymentID
		return p
	}),
	typed(func(e *domain.WebhookEndpointDisabledError) *problem {
		p := newProblem(probWebhookEndpointDisabled, e.Error()+".")
		p.EndpointID = e.EndpointID
		return p
	}),
	typed(func(e *paymentDeclinedError) *problem {
		p := newProblem(probPaymentDeclined, "The card was declined ("+e.failureCode+").")
		p.PaymentID, p.FailureCode = e.paymentID, e.failureCode
		return p
	}),
	typed(func(e *unauthorizedError) *problem { return unauthorizedProblem(e.detail) }),
	accountDeleted,
	typed(func(e *notFoundError) *problem { return newProblem(probNotFound, e.detail) }),
	typed(bodyProblem),
	typed(unavailableProblem),
	typed(rateLimitedProblem),
	typed(bindingProblem),
	sentinel(domain.ErrNotFound, probNotFound, 0),
	sentinel(domain.ErrIdempotencyKeyInUse, probIdempotencyKeyInUse, 1),
	sentinel(domain.ErrIdempotencyKeyReused, probIdempotencyKeyReused, 0),
	sentinel(domain.ErrPreconditionRequired, probPreconditionRequired, 0),
	sentinel(domain.ErrProcessorUnavailable, probProcessorUnavailable, 1),
	databaseUnavailable,
	transactionRolledBack,
	sentinel(domain.ErrJobNotCancelable, probJobNotCancelable, 0),
	typed(echoProblem), // echo's own errors: the generated binder's 400s, the router's 404 and 405
}

// databaseUnavailable is the row for a database that could not be reached or did not answer
// before the request's deadline (db.IsUnavailable): 503, not 500, because the request was
// fine and a retry may succeed. On an idempotent POST the transaction may have committed
// just before the connection broke; the retry with the same key finds out (it replays).
func databaseUnavailable(err error) *problem {
	if !db.IsUnavailable(err) {
		return nil
	}
	return unavailableProblem(unavailable(retryAfterUnavailable,
		"The database could not be reached or did not answer in time. Retry after Retry-After seconds (a POST with the same Idempotency-Key)."))
}

// accountDeleted is the row for a write refused because its account was deleted while the
// request ran (db.IsAccountDeleted): nothing of the request committed, and the key that
// authenticated it went with the account, so it answers the 401 its retry would get.
func accountDeleted(err error) *problem {
	if !db.IsAccountDeleted(err) {
		return nil
	}
	return unauthorizedProblem("The account was deleted while this request ran; nothing of the request was recorded.")
}

// unauthorizedProblem is a 401 with its challenge.
func unauthorizedProblem(detail string) *problem {
	p := newProblem(probUnauthorized, detail)
	p.Headers.Set("WWW-Authenticate", `Bearer realm="payments-api"`)
	return p
}

// transactionRolledBack is the row for a transaction PostgreSQL rolled back to break a
// deadlock with another request's (db.IsRolledBack): 503, not 500, because a retry may well
// get through. The server's own transactions take their locks in an order that leaves none
// (see accounts.Delete); this is for the one nobody foresaw.
func transactionRolledBack(err error) *problem {
	if !db.IsRolledBack(err) {
		return nil
	}
	return unavailableProblem(unavailable(retryAfterUnavailable,
		"The database rolled the request back to settle a conflict with another request. Send it again (a POST with the same Idempotency-Key)."))
}

// errorRule is one row of errorProblems: it returns nil when err is not its kind.
type errorRule func(err error) *problem

// typed is a row for errors of type E, found anywhere in err's chain with errors.As. build
// may return nil to pass the error on to later rows.
func typed[E error](build func(E) *problem) errorRule {
	return func(err error) *problem {
		var e E
		if !errors.As(err, &e) {
			return nil
		}
		return build(e)
	}
}

// sentinel is a row for a sentinel error, whose problem says what its type says. retryAfter
// (seconds), when not 0, is where the client should come back later.
func sentinel(target error, t problemType, retryAfter int) errorRule {
	return func(err error) *problem {
		if !errors.Is(err, target) {
			return nil
		}
		p := newProblem(t, t.Description)
		if retryAfter != 0 {
			p.Headers.Set("Retry-After", strconv.Itoa(retryAfter))
		}
		return p
	}
}

// echoProblems maps the statuses of echo's own errors, which reach the error handler from
// code this package does not write: the generated binder (400, 415), and echo's router (404,
// 405, should a request get past findOperation) and body limit (413). This is the one place
// an echo.HTTPError is read; the server's own code returns the errors the rows above know.
var echoProblems = map[int]problemType{
	http.StatusBadRequest:            probInvalidRequest,
	http.StatusNotFound:              probNotFound,
	http.StatusMethodNotAllowed:      probMethodNotAllowed,
	http.StatusRequestEntityTooLarge: probPayloadTooLarge,
	http.StatusUnsupportedMediaType:  probUnsupportedMediaType,
}

// handleError is echo's HTTPErrorHandler: every error a handler or middleware returns ends
// here and leaves as a problem. Unknown errors become a generic 500 that leaks nothing; the
// request's log line and span keep the problem's type and, for a 5xx, the error itself.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	p := s.problemFor(c, err)
	st := stateFrom(c.Request().Context())
	st.problem = p.Type
	if p.Status >= http.StatusInternalServerError && c.Get(clientGoneKey) != true {
		st.failure = err
	}
	// The instance is a URI reference, so the path goes out percent-encoded as it came: a
	// decoded path could hold a NUL or a control character. A longer path is not echoed: a
	// problem stays small whatever was sent.
	if path := c.Request().URL.EscapedPath(); len(path) <= contract.MaxEchoLength {
		p.Instance = path
	}
	p.RequestID = requestIDFrom(c.Request().Context())
	if writeErr := p.write(c.Response()); writeErr != nil {
		s.logger.ErrorContext(c.Request().Context(), "write problem", "error", writeErr, "request_id", p.RequestID)
	}
}

func (s *Server) problemFor(c echo.Context, err error) *problem {
	ctx := c.Request().Context()
	switch {
	case clientGone(ctx, err):
		// The work stopped because the client left: not a failure of ours, and nobody is
		// waiting for the answer (the logger records 499). Should a client still be reading
		// after all, it is told to retry.
		c.Set(clientGoneKey, true)
		err = unavailable(retryAfterUnavailable, "The request was canceled before it finished; send it again.")
	case canceled(ctx, err): // ErrShutdown
		err = unavailable(retryAfterUnavailable, "The server shut down before the request finished. Send it again (a POST with the same Idempotency-Key: it may have committed just before).")
	}
	if p := problemOf(err); p != nil {
		return p
	}
	return newProblem(probInternal, "The server failed to handle this request. Nothing about the failure is exposed here; request_id finds it in the server's logs.")
}

// problemOf is the problem of the first row of errorProblems that knows err, or nil.
func problemOf(err error) *problem {
	for _, rule := range errorProblems {
		if p := rule(err); p != nil {
			return p
		}
	}
	return nil
}

// bindingProblem is a body the schema accepts but Go cannot bind. The contract hands whole
// numbers on as integers (2500.0 and 25e2 as 2500), so for an integer member it would be
// one no int64 holds, which a schema without a maximum would let through: a 400 naming the
// member, not a 500.
func bindingProblem(e *json.UnmarshalTypeError) *problem {
	p := newProblem(probInvalidRequest, "The request does not match the API contract.")
	msg := "got " + e.Value
	if strings.HasPrefix(e.Type.Kind().String(), "int") {
		msg = "must be an integer between -9223372036854775808 and 9223372036854775807; got " + e.Value
	}
	p.Errors = []fieldError{{Field: "/" + strings.ReplaceAll(e.Field, ".", "/"), Message: msg}}
	return p
}

// echoProblem renders one of echo's own errors, or nil for a status with no problem type
// (a 500). Its message is safe to show (echo writes it for clients), but its Internal error
// is not.
func echoProblem(httpErr *echo.HTTPError) *problem {
	t, ok := echoProblems[httpErr.Code]
	if !ok {
		return nil
	}
	detail := t.Description
	if msg, ok := httpErr.Message.(string); ok && msg != http.StatusText(httpErr.Code) {
		detail = msg
	}
	return newProblem(t, detail)
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
