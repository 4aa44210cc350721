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
		return []fieldError{{Field: reqErr.Parameter.Name, Message: parameterMessage(reqErr)}}
	}
	var multi openapi3.MultiError
	if errors.As(reqErr.Err, &multi) {
		var fields []fieldError
		for _, e := range multi {
			fields = append(fields, schemaFieldError(e))
		}
		return fields
	}
	return []fieldError{schemaFieldError(reqErr.Err)}
}

func parameterMessage(reqErr *openapi3filter.RequestError) string {
	var schemaErr *openapi3.SchemaError
	if errors.As(reqErr.Err, &schemaErr) {
		return schemaErr.Reason
	}
	if reqErr.Err != nil {
		return reqErr.Err.Error()
	}
	return reqErr.Reason
}

// schemaFieldError names a body field by JSON pointer (/metadata/order_id).
func schemaFieldError(err error) fieldError {
	var schemaErr *openapi3.SchemaError
	if errors.As(err, &schemaErr) {
		return fieldError{Field: "/" + strings.Join(schemaErr.JSONPointer(), "/"), Message: schemaErr.Reason}
	}
	var parseErr *openapi3filter.ParseError
	if errors.As(err, &parseErr) {
		return fieldError{Field: "/", Message: "The body is not valid JSON: " + parseErr.RootCause().Error()}
	}
	if err == nil {
		return fieldError{Field: "/", Message: "The body is invalid."}
	}
	return fieldError{Field: "/", Message: err.Error()}
}
