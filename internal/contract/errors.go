package contract

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds on what an error echoes, so that the answer to any request stays small.
const (
	// MaxFieldErrors is how many field errors an Error lists; Omitted counts the rest.
	MaxFieldErrors = 20
	// MaxEchoLength is the most bytes of a client's text (a member name, a path) echoed back.
	MaxEchoLength = 256
)

// ErrNoRoute is a request whose path matches no operation of the spec.
var ErrNoRoute = errors.New("no operation matches the path")

// MethodNotAllowedError is a request whose path exists with other methods only.
type MethodNotAllowedError struct{ Allow []string }

func (e *MethodNotAllowedError) Error() string {
	return "method not allowed; allowed: " + strings.Join(e.Allow, ", ")
}

// MediaTypeError is a body in a media type, charset or content coding the operation does not
// accept. Accepted lists the media types it does (what a PATCH's Accept-Patch names), and
// Encoding says the content coding was the trouble (Accept-Encoding: identity says which
// one it reads).
type MediaTypeError struct {
	Detail   string
	Accepted []string
	Encoding bool
}

func (e *MediaTypeError) Error() string { return e.Detail }

// Error is a request that breaks the contract: at most MaxFieldErrors field errors, and the
// number of further ones found but not listed.
type Error struct {
	Summary string // one sentence for a person
	Fields  []FieldError
	Omitted int
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (%d invalid fields)", e.Summary, len(e.Fields)+e.Omitted)
}

// FieldError is one failure: where (a JSON pointer into the body, or a parameter or header
// name) and what is wrong, in words a person can act on.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

const summaryInvalid = "The request does not match the API contract."

// collector gathers field errors up to MaxFieldErrors and counts the others, so that the work
// done for an invalid request stays proportional to the request, whatever it holds.
type collector struct {
	notes   enumNotes // what the spec says of its enums, to word their errors
	fields  []FieldError
	omitted int
}

// full reports whether further errors would only be counted.
func (c *collector) full() bool { return len(c.fields) >= MaxFieldErrors }

func (c *collector) add(field, message string) {
	if c.full() {
		c.omitted++
		return
	}
	c.fields = append(c.fields, FieldError{Field: bounded(field), Message: bounded(message)})
}

// err is the collected errors as an *Error, or nil when there are none.
func (c *collector) err() error {
	if len(c.fields) == 0 {
		return nil
	}
	slices.SortStableFunc(c.fields, func(a, b FieldError) int { return strings.Compare(a.Field, b.Field) })
	return &Error{Summary: summaryInvalid, Fields: c.fields, Omitted: c.omitted}
}

// bodyError is a body refused while parsing, at path (nil for the whole body).
func bodyError(path []string, summary, message string) *Error {
	return &Error{Summary: summary, Fields: []FieldError{{Field: bounded(pointer(path)), Message: message}}}
}

// pointer is the JSON pointer (RFC 6901) of path; the root is written "/".
func pointer(path []string) string {
	if len(path) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, p := range path {
		b.WriteByte('/')
		if b.Len() > MaxEchoLength { // the rest would be cut anyway
			break
		}
		b.WriteString(escapePointer(printable(truncate(p, MaxEchoLength))))
	}
	return b.String()
}

// printable is s with every control character and invalid byte replaced by U+FFFD. A path
// names members the client wrote, and a body that fails to parse can still have named one
// with a raw NUL; an answer must never carry that back.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return utf8.RuneError
		}
		return r
	}, s)
}

// bounded cuts s to MaxEchoLength bytes, on a rune boundary, marking the cut with "…".
func bounded(s string) string {
	if len(s) <= MaxEchoLength {
		return s
	}
	return truncate(s, MaxEchoLength) + "…"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func quoteBounded(s string) string { return strconv.Quote(bounded(s)) }
