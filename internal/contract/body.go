package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits every JSON body meets, whatever its schema says. RFC 8259 (section 9) lets a parser
// set them; they are checked while parsing, so a body that breaks one costs no more than the
// bytes read up to that point, and no schema, now or later, can forget them.
const (
	// MaxDepth is the deepest nesting of objects and arrays accepted. The spec needs 2.
	MaxDepth = 32
	// MaxNumberLength is the longest number literal accepted, in bytes.
	MaxNumberLength = 64
	// MaxExponent bounds a number's decimal exponent: 1e999999 is ten bytes, but exact
	// arithmetic on it (a schema's maximum) costs tens of milliseconds.
	MaxExponent = 400
)

// parseJSON decodes a body (json.Number for numbers) and refuses what the database or the
// schemas could not handle safely: nesting beyond MaxDepth, duplicate member names (parsers
// disagree on which wins), bytes that are not UTF-8, the NUL character (PostgreSQL text cannot
// hold it), lone UTF-16 surrogates (a decoder silently turns them into U+FFFD) and numbers
// beyond MaxNumberLength or MaxExponent. The error is an *Error naming the offending field.
//
// A scan of the raw bytes checks those limits first, stopping at the first breach, so that
// encoding/json only ever decodes a body within them.
func parseJSON(raw []byte) (any, error) {
	s := scanner{raw: raw}
	if err := s.scan(); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		reason := syntaxReason(err)
		if bytes.HasPrefix(raw, []byte("\xEF\xBB\xBF")) {
			reason = bomReason
		}
		return nil, bodyError(nil, "The body is not valid JSON: "+reason+".", reason)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, bodyError(nil, "The body is not valid JSON: data follows the first JSON value.", "data follows the JSON value")
	}
	if members(v) != s.members { // a decoded object has fewer members than were sent
		dup := scanner{raw: raw, duplicates: true}
		return nil, dup.scan()
	}
	return v, nil
}

// scanner walks a body's bytes once, keeping only the path to where it is, for errors.
type scanner struct {
	raw        []byte
	frames     []frame // the open objects and arrays, outermost first
	members    int     // member names seen
	duplicates bool    // also look for duplicate member names (a slower, second scan)
}

type frame struct {
	object  bool
	key     []byte          // the current member's name, raw (objects)
	index   int             // the current item (arrays)
	wantKey bool            // the next string is a member name
	seen    map[string]bool // member names so far, when looking for duplicates
}

func (s *scanner) scan() error {
	for i := 0; i < len(s.raw); i++ {
		switch c := s.raw[i]; {
		case c == '"':
			end, reason := scanString(s.raw, i)
			if err := s.str(i, end, reason); err != nil {
				return err
			}
			i = end
		case c == '{' || c == '[':
			if len(s.frames) == MaxDepth {
				return bodyError(s.path(), "The body nests objects and arrays deeper than "+strconv.Itoa(MaxDepth)+" levels.",
					"nested deeper than "+strconv.Itoa(MaxDepth)+" levels")
			}
			f := frame{object: c == '{', wantKey: c == '{'}
			if s.duplicates && f.object {
				f.seen = map[string]bool{}
			}
			s.frames = append(s.frames, f)
		case c == '}' || c == ']':
			if len(s.frames) > 0 {
				s.frames = s.frames[:len(s.frames)-1]
			}
		case c == ',' && len(s.frames) > 0:
			top := &s.frames[len(s.frames)-1]
			top.index++
			top.wantKey = top.object
		case c == '-' || (c >= '0' && c <= '9'):
			end := i
			for end < len(s.raw) && strings.IndexByte("0123456789+-.eE", s.raw[end]) >= 0 {
				end++
			}
			if reason := badNumber(json.Number(s.raw[i:end])); reason != "" {
				return bodyError(s.path(), "A number in the body "+reason+".", "the number "+reason)
			}
			i = end - 1
		}
	}
	return nil
}

// str checks the string from raw[start] to its closing quote at raw[end].
func (s *scanner) str(start, end int, reason string) error {
	var top *frame
	if len(s.frames) > 0 {
		top = &s.frames[len(s.frames)-1]
	}
	if top == nil || !top.wantKey {
		if reason != "" {
			return bodyError(s.path(), "A string in the body "+reason+".", "the string "+reason)
		}
		return nil
	}
	top.wantKey = false
	s.members++
	if reason != "" {
		s.frames = s.frames[:len(s.frames)-1] // the error is about the object, not a member
		err := bodyError(s.path(), "A member name in the body "+reason+".", "a member name "+reason)
		return err
	}
	top.key = s.raw[start+1 : min(end, len(s.raw))]
	if top.seen != nil {
		name := unescape(top.key)
		if top.seen[name] {
			s.frames = s.frames[:len(s.frames)-1]
			return bodyError(s.path(), "The body has a duplicate member "+quoteBounded(name)+"; send each member once.",
				"duplicate member "+quoteBounded(name))
		}
		top.seen[name] = true
	}
	return nil
}

// path is where the scanner is, as pointer tokens.
func (s *scanner) path() []string {
	path := make([]string, 0, len(s.frames))
	for _, f := range s.frames {
		if f.object {
			if f.key == nil {
				break
			}
			path = append(path, unescape(f.key))
		} else {
			path = append(path, strconv.Itoa(f.index))
		}
	}
	return path
}

// unescape is a member name's raw bytes as the decoder reads them.
func unescape(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var name string
	if err := json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &name); err != nil {
		return string(raw)
	}
	return name
}

// members counts the members of every object in a decoded value.
func members(v any) int {
	switch v := v.(type) {
	case map[string]any:
		n := len(v)
		for _, m := range v {
			n += members(m)
		}
		return n
	case []any:
		n := 0
		for _, item := range v {
			n += members(item)
		}
		return n
	}
	return 0
}

// scanString finds the closing quote of the string opening at raw[start] and says what is
// wrong with the string, or "" when nothing is. A string left open ends at len(raw).
func scanString(raw []byte, start int) (end int, reason string) {
	end = len(raw)
	escapes := false
	for i := start + 1; i < len(raw); i++ {
		if raw[i] == '"' {
			end = i
			break
		}
		if raw[i] == '\\' {
			escapes = true
			i++
		}
	}
	body := raw[start+1 : end]
	if !utf8.Valid(body) {
		return end, "is not valid UTF-8"
	}
	if escapes {
		return end, badEscapes(body)
	}
	return end, ""
}

// badEscapes finds a \u escape of NUL or of a lone surrogate among a string's raw bytes.
func badEscapes(raw []byte) string {
	for i := bytes.IndexByte(raw, '\\'); i >= 0 && i+1 < len(raw); {
		if raw[i+1] != 'u' {
			i = nextEscape(raw, i+2)
			continue
		}
		r := hex4(raw[i+2:])
		switch {
		case r == 0:
			return `contains the NUL character (\u0000)`
		case r >= 0xDC00 && r <= 0xDFFF:
			return "contains a lone UTF-16 surrogate"
		case r >= 0xD800 && r <= 0xDBFF:
			// A high surrogate must be followed by a low one: \ud83d\ude00.
			if len(raw) < i+12 || raw[i+6] != '\\' || raw[i+7] != 'u' {
				return "contains a lone UTF-16 surrogate"
			}
			if low := hex4(raw[i+8:]); low < 0xDC00 || low > 0xDFFF {
				return "contains a lone UTF-16 surrogate"
			}
			i = nextEscape(raw, i+12)
			continue
		}
		i = nextEscape(raw, i+6)
	}
	return ""
}

// nextEscape is the index of the next backslash at or after from, or -1.
func nextEscape(raw []byte, from int) int {
	if from >= len(raw) {
		return -1
	}
	if j := bytes.IndexByte(raw[from:], '\\'); j >= 0 {
		return from + j
	}
	return -1
}

// hex4 reads the four hex digits of a \u escape; the decoder has already checked them.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	if err != nil {
		return -1
	}
	return rune(n)
}

// badNumber says what is wrong with a number literal, or "" when nothing is.
func badNumber(n json.Number) string {
	s := string(n)
	if len(s) > MaxNumberLength {
		return "is longer than " + strconv.Itoa(MaxNumberLength) + " characters"
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || exp > MaxExponent || exp < -MaxExponent {
			return "has an exponent beyond ±" + strconv.Itoa(MaxExponent)
		}
	}
	return ""
}

// syntaxReason is encoding/json's complaint, which quotes at most one character.
func syntaxReason(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "it ends before the JSON value does"
	}
	return err.Error()
}

// bomReason is why a body that starts with a byte order mark is not JSON: RFC 8259 has a
// sender not add one, and the decoder's own words would name its first byte as a character
// ('ï'), which tells the client nothing.
const bomReason = "it starts with a byte order mark (EF BB BF); send the JSON without one"
