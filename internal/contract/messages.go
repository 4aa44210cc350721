package contract

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// addSchemaErrors adds one field error per failing keyword at the leaves of the validator's
// error tree. prefix is the field the validated value sits at: "" for a body (whose errors
// are JSON pointers), or a parameter's name. The walk is linear in the tree, and the message
// of an error past MaxFieldErrors is never built. Enum messages are worded with c's notes.
func addSchemaErrors(c *collector, err error, prefix string, value any) {
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		c.add(orRoot(prefix), "fails its schema")
		return
	}
	// parent is the location of e's parent error. A propertyNames error's own InstanceLocation
	// shares the validator's scratch slice, which later members overwrite: only its length is
	// right, so the object is found again from the nearest trustworthy location.
	var walk func(e *jsonschema.ValidationError, parent []string)
	walk = func(e *jsonschema.ValidationError, parent []string) {
		switch k := e.ErrorKind.(type) {
		case *kind.AdditionalProperties:
			for _, name := range slices.Sorted(slices.Values(k.Properties)) {
				if c.full() {
					c.omitted++
					continue
				}
				c.add(field(prefix, child(e.InstanceLocation, name)), "unknown field")
			}
			return
		case *kind.Required:
			for _, name := range slices.Sorted(slices.Values(k.Missing)) {
				if c.full() {
					c.omitted++
					continue
				}
				c.add(field(prefix, child(e.InstanceLocation, name)), "is required")
			}
			return
		case *kind.PropertyNames:
			if c.full() {
				c.omitted++
				return
			}
			at := objectWithMember(value, parent, len(e.InstanceLocation), k.Property)
			c.add(field(prefix, child(at, k.Property)), "invalid member name: "+memberNameRule(e, c.notes))
			return
		}
		if len(e.Causes) > 0 {
			// The validator walks an object's members in map order: sorted, the same request
			// lists the same errors, the same MaxFieldErrors of them when there are more.
			causes := slices.Clone(e.Causes)
			slices.SortStableFunc(causes, func(a, b *jsonschema.ValidationError) int {
				return slices.Compare(sortKey(a), sortKey(b))
			})
			for _, cause := range causes {
				walk(cause, e.InstanceLocation)
			}
			return
		}
		if c.full() {
			c.omitted++
			return
		}
		c.add(field(prefix, e.InstanceLocation), message(e, c.notes))
	}
	walk(verr, nil)
}

// sortKey orders an error among its siblings: by where it is, and a member name's error,
// whose location is not to be trusted (see addSchemaErrors), by the name.
func sortKey(e *jsonschema.ValidationError) []string {
	if k, ok := e.ErrorKind.(*kind.PropertyNames); ok {
		return []string{k.Property}
	}
	return e.InstanceLocation
}

// field names a failure: a JSON pointer for a body, the parameter's name for a parameter.
func field(prefix string, location []string) string {
	if prefix != "" {
		return prefix
	}
	return pointer(location)
}

func orRoot(prefix string) string {
	if prefix == "" {
		return "/"
	}
	return prefix
}

// child is location with one more token, in a new slice: the validator shares its slices.
func child(location []string, token string) []string {
	return append(slices.Clip(location), token)
}

// objectWithMember is the location, depth tokens long and under from, of the first object
// that has a member called name; from when there is none.
func objectWithMember(root any, from []string, depth int, name string) []string {
	v := root
	for _, tok := range from {
		switch node := v.(type) {
		case map[string]any:
			v = node[tok]
		case []any:
			i, _ := strconv.Atoi(tok)
			if i < 0 || i >= len(node) {
				return from
			}
			v = node[i]
		default:
			return from
		}
	}
	var find func(v any, at []string) []string
	find = func(v any, at []string) []string {
		if len(at) == depth {
			if obj, ok := v.(map[string]any); ok {
				if _, has := obj[name]; has {
					return at
				}
			}
			return nil
		}
		switch node := v.(type) {
		case map[string]any:
			for k, member := range node {
				if found := find(member, child(at, k)); found != nil {
					return found
				}
			}
		case []any:
			for i, item := range node {
				if found := find(item, child(at, strconv.Itoa(i))); found != nil {
					return found
				}
			}
		}
		return nil
	}
	if found := find(v, slices.Clone(from)); found != nil {
		return found
	}
	return from
}

// memberNameRule is what a member name broke, from the causes of a propertyNames failure.
func memberNameRule(e *jsonschema.ValidationError, notes enumNotes) string {
	var rules []string
	for _, cause := range e.Causes {
		for len(cause.Causes) > 0 {
			cause = cause.Causes[0]
		}
		rules = append(rules, message(cause, notes))
	}
	if len(rules) == 0 {
		return "not allowed here"
	}
	return strings.Join(rules, "; ")
}

// message says what a failing keyword wants, never quoting the value: it may be a megabyte.
// Numbers are written as plain integers where they are integers (99999999, not 1e+08).
func message(e *jsonschema.ValidationError, notes enumNotes) string {
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		return "must be " + article(strings.Join(k.Want, " or ")) + ", not " + article(k.Got)
	case *kind.Enum:
		return enumMessage(k, notes[e.SchemaURL])
	case *kind.Const:
		return "must be " + fmt.Sprint(k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long; got %d", k.Want, k.Got)
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d members", k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d members; got %d", k.Want, k.Got)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items; got %d", k.Want, k.Got)
	case *kind.Minimum:
		return "must be at least " + plain(k.Want) + "; got " + plain(k.Got)
	case *kind.Maximum:
		return "must be at most " + plain(k.Want) + "; got " + plain(k.Got)
	case *kind.ExclusiveMinimum:
		return "must be greater than " + plain(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be less than " + plain(k.Want)
	case *kind.MultipleOf:
		return "must be a multiple of " + plain(k.Want)
	case *kind.Pattern:
		return "must match the pattern " + k.Want
	case *kind.Format:
		return formatMessage(k.Want)
	case *kind.FalseSchema:
		return "is not allowed"
	default:
		return "fails the " + strings.Join(k.KeywordPath(), "/") + " rule of its schema"
	}
}

// formatMessage describes a format by example rather than by its grammar.
func formatMessage(format string) string {
	switch format {
	case "date-time":
		return "must be an RFC 3339 timestamp such as 2026-01-02T15:04:05Z, with at most nine digits of a second"
	case "date":
		return "must be a date such as 2026-01-02"
	case "email":
		return "must be an email address"
	case "uri":
		return "must be an absolute URI such as https://example.com/hooks"
	default:
		return "must be a valid " + format
	}
}

// plain writes a number as an integer when it is one, and as a short decimal otherwise.
func plain(r *big.Rat) string {
	if r.IsInt() {
		return bounded(r.Num().String())
	}
	return bounded(r.FloatString(6))
}

func article(noun string) string {
	switch {
	case noun == "null":
		return "null"
	case noun != "" && strings.ContainsRune("aioAIO", rune(noun[0])):
		return "an " + noun
	default:
		return "a " + noun
	}
}
