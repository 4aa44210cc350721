package contract

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// enumNote is what a component schema says of its enum besides the values: a title naming
// what they are ("ISO 4217 currency code") and examples. A message about a long enum is worded
// with them instead of listing every value.
type enumNote struct {
	title    string
	examples []string
}

// enumNotes are the notes of the spec's titled enum components, by schema location: the
// SchemaURL of the errors their enum keyword reports.
type enumNotes map[string]enumNote

func newEnumNotes(spec *openapi3.T) enumNotes {
	notes := enumNotes{}
	for name, ref := range spec.Components.Schemas {
		s := ref.Value
		if ref.Ref != "" || s == nil || len(s.Enum) == 0 || s.Title == "" {
			continue
		}
		note := enumNote{title: s.Title}
		for _, example := range s.Examples {
			if text, ok := example.(string); ok {
				note.examples = append(note.examples, text)
			}
		}
		notes[specURL+"#/components/schemas/"+escapePointer(name)] = note
	}
	return notes
}

// enumMessage says what an enum wants. It never quotes the client's value, but may quote
// one of the spec's: a value that is one of a lowercase enum's but for case gets that one
// back ("USD": use "usd"). A long enum is described by its note, when it has one, rather than
// listed.
func enumMessage(k *kind.Enum, note enumNote) string {
	lowercase := lowercaseEnum(k.Want)
	if lowercase {
		if want, ok := sameButCase(k.Got, k.Want); ok {
			if note.title == "" {
				return "must be lowercase: use " + strconv.Quote(want)
			}
			return "must be a lowercase " + note.title + ": use " + strconv.Quote(want)
		}
	}
	switch {
	case len(k.Want) <= maxListedValues:
		return "must be one of " + strings.Join(enumValues(k.Want), ", ")
	case note.title == "":
		// A long enum would bury the message under every value it allows.
		return fmt.Sprintf("must be one of the %d values the spec lists for this field", len(k.Want))
	}
	what := article(note.title)
	if lowercase {
		what = "a lowercase " + note.title
	}
	if len(note.examples) > 0 {
		what += " such as " + orList(note.examples)
	}
	return fmt.Sprintf("must be %s (the spec lists all %d)", what, len(k.Want))
}

// maxListedValues is the most enum values a message spells out.
const maxListedValues = 10

// lowercaseEnum reports whether every value of an enum is a lowercase string (or null).
func lowercaseEnum(values []any) bool {
	for _, v := range values {
		if s, ok := v.(string); (!ok && v != nil) || s != strings.ToLower(s) {
			return false
		}
	}
	return true
}

// sameButCase is the value of values that got equals but for case, if there is one.
func sameButCase(got any, values []any) (string, bool) {
	text, ok := got.(string)
	if !ok {
		return "", false
	}
	for _, v := range values {
		if want, ok := v.(string); ok && strings.EqualFold(text, want) {
			return want, true
		}
	}
	return "", false
}

// orList quotes at most three values and joins them: `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
func orList(values []string) string {
	values = values[:min(len(values), 3)]
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = strconv.Quote(v)
	}
	if len(quoted) == 1 {
		return quoted[0]
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

func enumValues(values []any) []string {
	out := make([]string, len(values))
	for i, v := range values {
		if v == nil {
			out[i] = "null"
			continue
		}
		out[i] = fmt.Sprint(v)
	}
	return out
}
