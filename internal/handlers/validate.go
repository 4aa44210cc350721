package handlers

import (
	"fmt"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/labstack/echo/v4"
)

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
	nameSchemas := propertyNameSchemas(spec)
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
				return requestError(err, rawBodyFrom(req.Context()), nameSchemas)
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
	mediaType, params, err := mime.ParseMediaType(c.Request().Header.Get("Content-Type"))
	if err == nil && rb.Value.Content.Get(mediaType) != nil {
		// Media types are case-insensitive, but the generated binder compares prefixes
		// case-sensitively: hand it the canonical, lowercase form.
		c.Request().Header.Set("Content-Type", mime.FormatMediaType(mediaType, params))
		return nil
	}
	accepted := slices.Sorted(maps.Keys(rb.Value.Content))
	return echo.NewHTTPError(http.StatusUnsupportedMediaType, "Send the body as "+strings.Join(accepted, " or ")+".")
}
