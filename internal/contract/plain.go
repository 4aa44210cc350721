package contract

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// plainString checks a parameter whose schema is a plain string's (type string, with at most
// pattern, minLength and maxLength) without the JSON Schema validator. Such parameters are
// on nearly every request (the ID in /payments/{id}), and the validator spends more on one
// than the check itself costs: it boxes the string, allocates its state and walks the
// schema's keywords. accepts only ever says yes: a value it does not accept goes to the
// validator, which words the 400, so the two can never disagree on a message.
type plainString struct {
	pattern   jsonschema.Regexp // the validator's own compiled pattern, so both match alike; nil when none
	minLength int
	maxLength int // -1 when none
}

// plainKeywords are the keywords a plain string's schema may have: what accepts checks, and
// annotations, which check nothing.
var plainKeywords = map[string]bool{
	"type": true, "pattern": true, "minLength": true, "maxLength": true,
	"description": true, "title": true, "example": true, "examples": true,
}

// writtenSchema is a schema as the spec writes it (a $ref stays a $ref, not what it names),
// in kin-openapi's JSON form; nil if it has none.
func writtenSchema(schema *openapi3.SchemaRef) map[string]any {
	raw, err := schema.MarshalJSON()
	var written map[string]any
	if err != nil || json.Unmarshal(raw, &written) != nil {
		return nil
	}
	return written
}

// isPlainString reports whether a schema, as written in the spec, is a plain string's. Any
// other keyword ($ref, enum, format, const, ...) leaves the parameter to the validator.
func isPlainString(schema map[string]any) bool {
	if schema["type"] != "string" {
		return false
	}
	for k := range schema {
		if !plainKeywords[k] {
			return false
		}
	}
	return true
}

func newPlainString(compiled *jsonschema.Schema) *plainString {
	p := &plainString{pattern: compiled.Pattern, maxLength: -1}
	if compiled.MinLength != nil {
		p.minLength = *compiled.MinLength
	}
	if compiled.MaxLength != nil {
		p.maxLength = *compiled.MaxLength
	}
	return p
}

// accepts reports whether s is valid against the schema, counting its length in characters
// as JSON Schema does.
func (p *plainString) accepts(s string) bool {
	if p.minLength > 0 || p.maxLength >= 0 {
		n := utf8.RuneCountInString(s)
		if n < p.minLength || (p.maxLength >= 0 && n > p.maxLength) {
			return false
		}
	}
	return p.pattern == nil || p.pattern.MatchString(s)
}
