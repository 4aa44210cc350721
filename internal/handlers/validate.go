package handlers

import (
	"encoding/json"
	"errors"
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
	nameSchemas := propertyNameSchemas(spec)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			route, pathParams, err := router.FindRoute(req)
			if errors.Is(err, routers.ErrMethodNotAllowed) && req.Method == http.MethodOptions {
				// echo would answer OPTIONS with 204; the contract has no OPTIONS operations,
				// so it is a wrong method like any other.
				c.Response().Header().Set("Allow", allowedMethods(router, req))
				return echo.ErrMethodNotAllowed
			}
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
	accepted := make([]string, 0, len(rb.Value.Content))
	for mt := range rb.Value.Content {
		accepted = append(accepted, mt)
	}
	return echo.NewHTTPError(415, "Send the body as "+strings.Join(accepted, " or ")+".")
}

// allowedMethods lists the methods the spec defines on the request's path.
func allowedMethods(router routers.Router, req *http.Request) string {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete} {
		probe := req.Clone(req.Context())
		probe.Method = m
		if route, _, err := router.FindRoute(probe); err == nil {
			methods := make([]string, 0, len(route.PathItem.Operations()))
			for method := range route.PathItem.Operations() {
				methods = append(methods, method)
			}
			slices.Sort(methods)
			return strings.Join(methods, ", ")
		}
	}
	return ""
}

// requestBody is the decoded body and the spec's propertyNames schemas, for badMemberName.
type requestBody struct {
	value       any
	nameSchemas []*openapi3.Schema
}

// requestError flattens kin-openapi's errors into one field error each.
func requestError(err error, raw []byte, nameSchemas []*openapi3.Schema) error {
	decoded := requestBody{nameSchemas: nameSchemas}
	_ = json.Unmarshal(raw, &decoded.value) // nil when there is no (valid) body
	var fields []fieldError
	var multi openapi3.MultiError
	if errors.As(err, &multi) {
		for _, e := range multi {
			fields = append(fields, fieldErrors(e, decoded)...)
		}
	} else {
		fields = fieldErrors(err, decoded)
	}
	for _, f := range fields {
		if f.Field == "Idempotency-Key" {
			return &domain.InvalidIdempotencyKeyError{Reason: f.Message}
		}
	}
	return &requestErrors{fields: unique(fields)}
}

// unique keeps the first of equal entries: one failure can be reported more than once.
func unique(fields []fieldError) []fieldError {
	seen := map[fieldError]bool{}
	out := fields[:0]
	for _, f := range fields {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

func fieldErrors(err error, body requestBody) []fieldError {
	var reqErr *openapi3filter.RequestError
	if !errors.As(err, &reqErr) {
		return []fieldError{{Field: "/", Message: err.Error()}}
	}
	var parseErr *openapi3filter.ParseError
	switch {
	case reqErr.Parameter != nil:
		var messages []string
		for _, f := range schemaFieldErrors(reqErr.Err, body) {
			messages = append(messages, f.Message)
		}
		return []fieldError{{Field: reqErr.Parameter.Name, Message: strings.Join(messages, "; ")}}
	case errors.As(reqErr.Err, &parseErr):
		return []fieldError{{Field: "/", Message: "The body is not valid JSON: " + parseErr.RootCause().Error()}}
	case reqErr.Err != nil:
		return schemaFieldErrors(reqErr.Err, body)
	default:
		return []fieldError{{Field: "/", Message: reqErr.Reason}}
	}
}

// schemaFieldErrors walks kin-openapi's tree of schema errors (one per failing keyword, the
// causes of each in its Origin) down to the JSON Schema validator's errors at the leaves,
// which carry the exact location and keyword of each failure.
func schemaFieldErrors(err error, body requestBody) []fieldError {
	var (
		multi openapi3.MultiError
		leaf  *jsonschema.ValidationError
	)
	node, isNode := err.(*openapi3.SchemaError)
	switch {
	case isNode && node.SchemaField == "propertyNames":
		return badMemberNames(body)
	case isNode && node.Origin != nil:
		return schemaFieldErrors(node.Origin, body)
	case errors.As(err, &multi):
		var fields []fieldError
		for _, e := range multi {
			fields = append(fields, schemaFieldErrors(e, body)...)
		}
		return fields
	case errors.As(err, &leaf):
		return schemaLeaves(leaf)
	default:
		return []fieldError{{Field: "/", Message: err.Error()}}
	}
}

// badMemberNames reports the member names that fail a `propertyNames` schema. kin-openapi
// reports such a failure with the wrong location (another member's), so the members are
// found instead by checking the body's names against the spec's propertyNames schemas.
func badMemberNames(body requestBody) []fieldError {
	var fields []fieldError
	for _, names := range body.nameSchemas {
		fields = append(fields, findBadNames(body.value, names, "")...)
	}
	if len(fields) == 0 {
		return []fieldError{{Field: "/", Message: "invalid member name"}}
	}
	return fields
}

// findBadNames checks every member name in v, at any depth, against the names schema.
func findBadNames(v any, names *openapi3.Schema, at string) []fieldError {
	var fields []fieldError
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			ptr := at + "/" + escapePointer(k)
			if err := names.VisitJSON(k, openapi3.EnableJSONSchema2020()); err != nil {
				reason := err.Error()
				var leaf *jsonschema.ValidationError
				if errors.As(err, &leaf) {
					reason = leaf.ErrorKind.LocalizedString(english)
				}
				fields = append(fields, fieldError{Field: ptr, Message: fmt.Sprintf("invalid member name %q: %s", k, reason)})
			}
			fields = append(fields, findBadNames(v[k], names, ptr)...)
		}
	case []any:
		for i, child := range v {
			fields = append(fields, findBadNames(child, names, fmt.Sprintf("%s/%d", at, i))...)
		}
	}
	return fields
}

// propertyNameSchemas collects every propertyNames schema under the spec's component schemas.
func propertyNameSchemas(spec *openapi3.T) []*openapi3.Schema {
	var found []*openapi3.Schema
	seen := map[*openapi3.Schema]bool{}
	var walk func(*openapi3.SchemaRef)
	walk = func(ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		seen[ref.Value] = true
		if pn := ref.Value.PropertyNames; pn != nil && pn.Value != nil {
			found = append(found, pn.Value)
		}
		for _, p := range ref.Value.Properties {
			walk(p)
		}
		walk(ref.Value.Items)
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Components.Schemas)) {
		walk(spec.Components.Schemas[name])
	}
	return found
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
