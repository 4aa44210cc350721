package contract

import (
	"encoding/json"
	"regexp/syntax"
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
	fast      *classPattern     // the pattern, or some of its alternatives, matched without the regexp; nil when none
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
		p.fast = newClassPattern(p.pattern.String())
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
// as JSON Schema does. The regexp decides what the fast match does not accept.
func (p *plainString) accepts(s string) bool {
	if p.minLength > 0 || p.maxLength >= 0 {
		n := utf8.RuneCountInString(s)
		if n < p.minLength || (p.maxLength >= 0 && n > p.maxLength) {
			return false
		}
	}
	if p.fast != nil && p.fast.matches(s) {
		return true
	}
	return p.pattern == nil || p.pattern.MatchString(s)
}

// classPattern matches the shape of the spec's patterns without Go's regexp engine, which
// steps through its program a character at a time (and through a program of 255 steps for a
// repeat of {0,254}): anchored at both ends, one or more alternatives, each a sequence of
// ASCII classes repeated a bounded or unbounded number of times, a literal character being a
// class of one. `^pay_[A-Za-z0-9]+$` is one alternative of five classes; Idempotency-Key's
// `^(?:[ !#-~][ -~]{0,254}|"…")$` has the bare key, two classes, and the quoted key, which
// this shape cannot hold and leaves to the regexp.
//
// It matches greedily and never backtracks: each class takes as many characters as it may.
// So a match is always one the regexp finds too, but a miss may not be (greedy, `^[a-z]+z$`
// leaves no z for the end), and accepts asks the regexp then. On the spec's patterns, where
// no class is followed by one that overlaps it, greedy matching finds every match.
type classPattern struct {
	alternatives [][]classRun
}

// classRun is one class repeated from min to max times (max -1: without bound).
type classRun struct {
	class    [utf8.RuneSelf]bool // the bytes the class admits
	min, max int
}

// newClassPattern reads pattern's alternatives that have the shape, from its parse tree, or
// returns nil when none has. A pattern is ECMA-262 to JSON Schema and RE2 to Go; on this
// ASCII-only shape the two mean the same.
func newClassPattern(pattern string) *classPattern {
	re, err := syntax.Parse(pattern, syntax.Perl) // Perl's flags make $ the end of the text, as in regexp.Compile
	if err != nil || re.Op != syntax.OpConcat || len(re.Sub) < 3 ||
		re.Sub[0].Op != syntax.OpBeginText || re.Sub[len(re.Sub)-1].Op != syntax.OpEndText {
		return nil
	}
	inner := re.Sub[1 : len(re.Sub)-1]
	alternatives := []*syntax.Regexp{{Op: syntax.OpConcat, Sub: inner}}
	if len(inner) == 1 && inner[0].Op == syntax.OpAlternate {
		alternatives = inner[0].Sub
	}
	m := &classPattern{}
	for _, alt := range alternatives {
		if runs, ok := classRuns(alt); ok {
			m.alternatives = append(m.alternatives, runs)
		}
	}
	if len(m.alternatives) == 0 {
		return nil
	}
	return m
}

// classRuns is an alternative as classes, if it has the shape.
func classRuns(re *syntax.Regexp) ([]classRun, bool) {
	items := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		items = re.Sub
	}
	var runs []classRun
	for _, item := range items {
		least, most, one := 1, 1, item
		switch item.Op {
		case syntax.OpStar:
			least, most, one = 0, -1, item.Sub[0]
		case syntax.OpPlus:
			least, most, one = 1, -1, item.Sub[0]
		case syntax.OpQuest:
			least, most, one = 0, 1, item.Sub[0]
		case syntax.OpRepeat:
			least, most, one = item.Min, item.Max, item.Sub[0]
		case syntax.OpLiteral: // a string: a class of one character for each
			if item.Flags&syntax.FoldCase != 0 {
				return nil, false
			}
			for _, r := range item.Rune {
				run, ok := newClassRun([]rune{r, r}, 1, 1)
				if !ok {
					return nil, false
				}
				runs = append(runs, run)
			}
			continue
		}
		var ranges []rune // lo, hi pairs
		switch {
		case one.Op == syntax.OpCharClass:
			ranges = one.Rune
		case one.Op == syntax.OpLiteral && len(one.Rune) == 1 && one.Flags&syntax.FoldCase == 0:
			ranges = []rune{one.Rune[0], one.Rune[0]}
		default:
			return nil, false
		}
		run, ok := newClassRun(ranges, least, most)
		if !ok {
			return nil, false
		}
		runs = append(runs, run)
	}
	return runs, true
}

// newClassRun is the class of ranges, repeated from least to most times, if it is all ASCII.
func newClassRun(ranges []rune, least, most int) (classRun, bool) {
	run := classRun{min: least, max: most}
	for i := 0; i < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if hi >= utf8.RuneSelf {
			return classRun{}, false
		}
		for r := lo; r <= hi; r++ {
			run.class[r] = true
		}
	}
	return run, true
}

// matches reports whether one of the alternatives matches all of s, greedily.
func (m *classPattern) matches(s string) bool {
	for _, runs := range m.alternatives {
		if matchRuns(runs, s) {
			return true
		}
	}
	return false
}

func matchRuns(runs []classRun, s string) bool {
	i := 0
	for r := range runs {
		run := &runs[r]
		n := 0
		for i < len(s) && (run.max < 0 || n < run.max) && s[i] < utf8.RuneSelf && run.class[s[i]] {
			i++
			n++
		}
		if n < run.min {
			return false
		}
	}
	return i == len(s)
}
