package contract

import (
	"encoding/json"
	"regexp/syntax"
	"strings"
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
	fast      *prefixClass      // the pattern, when its shape can be matched without the regexp; else nil
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
	if p.pattern != nil {
		p.fast = newPrefixClass(p.pattern.String())
	}
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
	switch {
	case p.fast != nil:
		return p.fast.matches(s)
	case p.pattern != nil:
		return p.pattern.MatchString(s)
	}
	return true
}

// prefixClass matches a pattern of the shape `^prefix[class]+$` (or `*`), all of it ASCII:
// the shape of every ID pattern in the spec ("^pay_[A-Za-z0-9]+$"). It compares the prefix and
// then looks each remaining byte up in the class, where Go's regexp engine steps through
// its program a character at a time: on a payment ID that was most of what validating a GET
// cost (docs/performance.md). Any other pattern keeps the regexp.
type prefixClass struct {
	prefix string
	class  [utf8.RuneSelf]bool // the bytes the class admits
	empty  bool                // the quantifier is `*`: the prefix alone matches
}

// newPrefixClass recognises pattern's shape from its parse tree, or returns nil. A pattern is
// ECMA-262 to JSON Schema and RE2 to Go; on this ASCII-only shape the two mean the same.
func newPrefixClass(pattern string) *prefixClass {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat || len(re.Sub) != 4 {
		return nil
	}
	begin, literal, repeat, end := re.Sub[0], re.Sub[1], re.Sub[2], re.Sub[3]
	if begin.Op != syntax.OpBeginText || end.Op != syntax.OpEndText ||
		literal.Op != syntax.OpLiteral || literal.Flags&syntax.FoldCase != 0 ||
		(repeat.Op != syntax.OpPlus && repeat.Op != syntax.OpStar) || repeat.Sub[0].Op != syntax.OpCharClass {
		return nil
	}
	m := &prefixClass{prefix: string(literal.Rune), empty: repeat.Op == syntax.OpStar}
	for _, r := range literal.Rune {
		if r >= utf8.RuneSelf {
			return nil
		}
	}
	ranges := repeat.Sub[0].Rune // lo, hi pairs
	for i := 0; i < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if hi >= utf8.RuneSelf {
			return nil
		}
		for r := lo; r <= hi; r++ {
			m.class[r] = true
		}
	}
	return m
}

func (m *prefixClass) matches(s string) bool {
	rest, ok := strings.CutPrefix(s, m.prefix)
	if !ok || (rest == "" && !m.empty) {
		return false
	}
	for i := range len(rest) {
		if c := rest[i]; c >= utf8.RuneSelf || !m.class[c] {
			return false
		}
	}
	return true
}
