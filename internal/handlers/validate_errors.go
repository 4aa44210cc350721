package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// This file turns kin-openapi's validation errors into the errors member of an
// invalid-request problem: one entry per failure, each naming its field as a JSON pointer
// into the body (/metadata/order_id) or as a parameter or header name.

// requestErrors is a request that breaks the contract, one entry per field.
type requestErrors struct{ fields []fieldError }

func (e *requestErrors) Error() string { return fmt.Sprintf("%d invalid fields", len(e.fields)) }

// requestBody is the decoded body and the spec's propertyNames schemas, for badMemberNames.
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
	// Only this node: errors.As would also match inside a MultiError (it implements As) and
	// so drop its other members.
	node, isNode := err.(*openapi3.SchemaError) //nolint:errorlint // see above
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
	if enum, ok := v.ErrorKind.(*kind.Enum); ok && len(enum.Want) > maxListedValues {
		// A long enum (the currencies) would bury the message under every value it allows.
		return []fieldError{{Field: ptr, Message: fmt.Sprintf("must be one of the %d values the spec lists for this field", len(enum.Want))}}
	}
	return []fieldError{{Field: ptr, Message: v.ErrorKind.LocalizedString(english)}}
}

// maxListedValues is the most enum values a field error spells out.
const maxListedValues = 10

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
