package handlers

import (
	"cmp"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/contract"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/trace"
)

// findOperation answers a request that matches no operation of the spec at once, 404 or 405,
// before authentication, rate limits, injected faults or its body can answer anything else:
// a route that does not exist is not found, whoever asks and however often. echo has routed
// the request already, so the operation is looked up by echo's route (its method and
// "/payments/:id"); only a request echo matched to no operation goes through the contract's
// own router, for its 404 or 405.
func findOperation(spec *contract.Contract) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			var op *contract.Operation
			if template, ok := spec.Template(c.Path()); ok && !slashInParam(c) {
				op = spec.Operation(c.Request().Method, template) // nil: a method the route does not take
			} else {
				// Matched to no route: the log, the metrics and the span say so (unmatched),
				// rather than name the route echo took "/payments/a/b" for.
				c.SetPath("")
			}
			if op == nil {
				_, err := spec.ValidateRequest(c.Request(), nil)
				return requestError(c, cmp.Or(err, contract.ErrNoRoute))
			}
			stateFrom(c.Request().Context()).operation = op
			return next(c)
		}
	}
}

// slashInParam reports whether echo filled a path parameter with a slash: it matches
// "/payments//x" to "/payments/:id" with the id "/x", but a spec path parameter is one
// segment, so that request matches no operation.
func slashInParam(c echo.Context) bool {
	for _, v := range c.ParamValues() {
		if strings.Contains(v, "/") {
			return true
		}
	}
	return false
}

// operationOf is the operation findOperation found for the request.
func operationOf(c echo.Context) *contract.Operation {
	return stateFrom(c.Request().Context()).operation
}

// validateRequests checks every request against its operation in api/openapi.yaml before a
// handler sees it: parameters, headers, media type and body (unknown members included, since
// the schemas say additionalProperties: false). The contract is enforced in one place, so
// handlers only check what a schema cannot say.
func validateRequests() echo.MiddlewareFunc {
	large := make(chan struct{}, 1) // see largeBody
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			body := rawBodyFrom(req.Context())
			if len(body) > largeBody {
				select {
				case large <- struct{}{}:
					defer func() { <-large }()
				case <-req.Context().Done():
					return req.Context().Err()
				}
			}
			span := trace.Start(req.Context(), "validate")
			valid, err := operationOf(c).Validate(req, c, body)
			span.End()
			if err != nil {
				return requestError(c, err)
			}
			if valid.Query != nil {
				req.URL.RawQuery = valid.Query.Encode() // limit=10.0 bound as the schema read it
			}
			if valid.MediaType != "" {
				// Media types are case-insensitive, but the generated binder compares prefixes
				// case-sensitively: hand it the canonical, lowercase form.
				req.Header.Set("Content-Type", valid.MediaType)
				req.Body = validatedBody{ReadCloser: req.Body, value: valid.Body}
				stateFrom(req.Context()).decoded = valid.Body
			}
			return next(c)
		}
	}
}

// largeBody is the size above which bodies are validated one at a time. The largest valid
// body of the spec is about 30 KB (50 metadata entries of 540 bytes), so only bodies that are
// certain to fail wait here: their senders queue behind each other instead of taking every core
// from ordinary requests.
const largeBody = 64 << 10

// validatedBody hands the generated handler the value the contract decoded and validated,
// which it binds by exact member names (oapi-codegen's runtime looks for ValidatedValue);
// the bytes stay readable for its fallback decoder.
type validatedBody struct {
	io.ReadCloser
	value any
}

// ValidatedValue is the decoded body.
func (b validatedBody) ValidatedValue() any { return b.value }

// requestError turns a contract error into the error the problem table knows.
func requestError(c echo.Context, err error) error {
	var (
		methods *contract.MethodNotAllowedError
		invalid *contract.Error
		media   *contract.MediaTypeError
	)
	switch {
	case errors.As(err, &methods):
		// echo's router lists HEAD and OPTIONS too (see methods.go); the spec's list is the
		// fallback where echo matched no route.
		allow, _ := c.Get(echo.ContextKeyHeaderAllow).(string)
		if allow == "" {
			allow = strings.Join(methods.Allow, ", ")
		}
		c.Response().Header().Set(echo.HeaderAllow, allow)
	case errors.As(err, &media):
		// What would have been read, as RFC 9110 (a content coding) and RFC 5789 (a PATCH's
		// media type) ask a 415 to say.
		if media.Encoding {
			c.Response().Header().Set("Accept-Encoding", "identity")
		} else if c.Request().Method == http.MethodPatch {
			c.Response().Header().Set("Accept-Patch", strings.Join(media.Accepted, ", "))
		}
	case errors.As(err, &invalid):
		for _, f := range invalid.Fields {
			if f.Field == "Idempotency-Key" {
				return idempotencyKeyError(c.Request().Header.Values("Idempotency-Key"))
			}
		}
	}
	return err
}

// idempotencyKeyError explains a bad Idempotency-Key by the key's own rules (1-255 printable
// ASCII, bare or quoted), not by the schema's, whose length allows for the quotes.
func idempotencyKeyError(values []string) error {
	switch len(values) {
	case 0:
		return &domain.InvalidIdempotencyKeyError{Reason: "the header is missing; send a unique key (a UUID, say) with each new request, and the same key when you retry it"}
	case 1:
		if _, err := idempotency.ParseKey(values[0]); err != nil {
			return err
		}
		return &domain.InvalidIdempotencyKeyError{Reason: "the key must be 1-255 printable ASCII characters"}
	default:
		return &domain.InvalidIdempotencyKeyError{Reason: "send the header once"}
	}
}
