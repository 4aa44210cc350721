package handlers

import (
	"errors"
	"fmt"
	"mime"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// requestErrors is a request that breaks the contract, one entry per field.
type requestErrors struct{ fields []fieldError }

func (e *requestErrors) Error() string { return fmt.Sprintf("%d invalid fields", len(e.fields)) }

// validateRequests checks every request against api/openapi.yaml before a handler sees it:
// parameters, headers, body schema (unknown fields included, since the schemas say
// additionalProperties: false) and media type. The contract is enforced in one place, so
// handlers only check what a schema cannot say.
//
// kin-openapi does the validation; this middleware only turns its errors into problems that
// name each field, and answers 415 (which kin-openapi reports as a generic error).
func validateRequests(spec *openapi3.T) (echo.MiddlewareFunc, error) {
	spec.Servers = nil // match on the path alone, wherever the server is mounted
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		return nil, fmt.Errorf("build validation router: %w", err)
	}
	opts := &openapi3filter.Options{
		MultiError: true,
		// Hand the validated value to the generated handler, which binds it by exact member
		// names; echo's own binder would refuse application/merge-patch+json.
		KeepValidatedValue: true,
		// authenticate has already run; the spec's security is enforced there.
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			route, pathParams, err := router.FindRoute(req)
			if err != nil {
				return next(c) // no such operation: echo answers 404 or 405 itself
			}
			if err := checkMediaType(route, c); err != nil {
				return err
			}
			in := &openapi3filter.RequestValidationInput{
				Request: req, PathParams: pathParams, Route: route, Options: opts,
			}
			if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil {
				return requestError(err)
			}
			return next(c)
		}
	}, nil
}

// checkMediaType answers 415 for a body in a media type the operation does not accept.
func checkMediaType(route *routers.Route, c echo.Context) error {
	rb := route.Operation.RequestBody
	if rb == nil || rb.Value == nil || len(rawBodyFrom(c.Request().Context())) == 0 {
		return nil
	}
	mediaType, _, err := mime.ParseMediaType(c.Request().Header.Get("Content-Type"))
	if err == nil && rb.Value.Content.Get(mediaType) != nil {
		return nil
	}
	accepted := make([]string, 0, len(rb.Value.Content))
	for mt := range rb.Value.Content {
		accepted = append(accepted, mt)
	}
	return echo.NewHTTPError(415, "Send the body as "+strings.Join(accepted, " or ")+".")
}

// requestError flattens kin-openapi's errors into one field error each.
func requestError(err error) error {
	var fields []fieldError
	var multi openapi3.MultiError
	if errors.As(err, &multi) {
		for _, e := range multi {
			fields = append(fields, fieldErrors(e)...)
		}
	} else {
		fields = fieldErrors(err)
	}
	for _, f := range fields {
		if f.Field == "Idempotency-Key" {
			return &domain.InvalidIdempotencyKeyError{Reason: f.Message}
		}
	}
	return &requestErrors{fields: fields}
}

func fieldErrors(err error) []fieldError {
	var reqErr *openapi3filter.RequestError
	if !errors.As(err, &reqErr) {
		return []fieldError{{Field: "/", Message: err.Error()}}
	}
	if reqErr.Parameter != nil {
		var messages []string
		for _, f := range bodyFieldErrors(reqErr.Err, reqErr.Reason) {
			messages = append(messages, f.Message)
		}
		return []fieldError{{Field: reqErr.Parameter.Name, Message: strings.Join(messages, "; ")}}
	}
	return bodyFieldErrors(reqErr.Err, reqErr.Reason)
}

// bodyFieldErrors names each failing body field by JSON pointer (/metadata/order_id). The
// JSON Schema validator's own error tree has the exact location and keyword of each failure.
func bodyFieldErrors(err error, reason string) []fieldError {
	var (
		parseErr  *openapi3filter.ParseError
		multi     openapi3.MultiError
		schemaErr *jsonschema.ValidationError
	)
	switch {
	case errors.As(err, &multi): // kin-openapi groups the failures of a schema and its $refs
		var fields []fieldError
		for _, e := range multi {
			fields = append(fields, bodyFieldErrors(e, reason)...)
		}
		return fields
	case errors.As(err, &parseErr):
		return []fieldError{{Field: "/", Message: "The body is not valid JSON: " + parseErr.RootCause().Error()}}
	case errors.As(err, &schemaErr):
		return schemaLeaves(schemaErr)
	case err != nil:
		return []fieldError{{Field: "/", Message: err.Error()}}
	default:
		return []fieldError{{Field: "/", Message: reason}}
	}
}

var english = message.NewPrinter(language.English)

func schemaLeaves(v *jsonschema.ValidationError) []fieldError {
	if len(v.Causes) > 0 {
		var fields []fieldError
		for _, c := range v.Causes {
			fields = append(fields, schemaLeaves(c)...)
		}
		return fields
	}
	ptr := jsonPointer(v.InstanceLocation)
	if extra, ok := v.ErrorKind.(*kind.AdditionalProperties); ok {
		fields := make([]fieldError, 0, len(extra.Properties))
		for _, name := range extra.Properties {
			fields = append(fields, fieldError{Field: strings.TrimSuffix(ptr, "/") + "/" + escapePointer(name), Message: "unknown field"})
		}
		return fields
	}
	return []fieldError{{Field: ptr, Message: v.ErrorKind.LocalizedString(english)}}
}

func jsonPointer(location []string) string {
	escaped := make([]string, len(location))
	for i, s := range location {
		escaped[i] = escapePointer(s)
	}
	return "/" + strings.Join(escaped, "/")
}

// escapePointer escapes a member name for a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
