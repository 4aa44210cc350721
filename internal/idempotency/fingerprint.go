package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Fingerprint identifies a request for comparison with the one that first used the key:
// SHA-256 over the operation and the canonical form of the JSON body. A client that
// re-serialises the same body (other key order, other spacing, 5000 written as 5e3 or
// 5000.0, which the contract binds as the same integer) gets the same fingerprint; any
// changed value gives another.
//
// body is the document as Decode returns it: maps, slices, strings, json.Number, bools and
// nil. The server passes the body its contract has already decoded and checked, which
// refuses what Decode refuses, so a body is parsed once, not once more here.
func Fingerprint(operation string, body any) ([]byte, error) {
	c, err := canonical(body)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write([]byte(operation))
	h.Write([]byte{0}) // the operation never contains NUL, so the split is unambiguous
	h.Write(c)
	return h.Sum(nil), nil
}

// OnResource is the document Fingerprint takes for an operation on one resource: the id in
// its path beside its body (nil when it has none). The id is as much the request as the body:
// the key of PATCH /payments/pay_1 sent with the same body to /payments/pay_2 is another
// request (422), where the body alone would replay pay_1's answer for pay_2.
func OnResource(id string, body any) any {
	return map[string]any{"id": id, "body": body}
}

// canonicalize rewrites a JSON document in the normal form Fingerprint hashes: object
// members sorted by key, no whitespace, strings re-escaped uniformly, numbers in exact
// scientific form (digits "e" exponent, never through float64, which would make
// 9007199254740993 equal ...992). The server never holds the bytes alone (Fingerprint takes
// the decoded body); the tests and the fuzz target check the form through it.
func canonicalize(doc []byte) ([]byte, error) {
	v, err := Decode(doc)
	if err != nil {
		return nil, err
	}
	return canonical(v)
}

// Decode reads a JSON document as Fingerprint takes it, numbers as json.Number. It refuses
// what has no single meaning to compare: bytes that are not UTF-8 (a decoder replaces them),
// duplicate member names (which one wins differs between parsers) and data after the value.
func Decode(doc []byte) (any, error) {
	if !utf8.Valid(doc) {
		return nil, errors.New("the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("the body has data after its JSON value")
	}
	return v, nil
}

// decodeValue reads one value token by token, which is what lets it see a member name twice.
func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	switch tok {
	case json.Delim('{'):
		object := map[string]any{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("invalid JSON: %w", err)
			}
			name := tok.(string) // the decoder only yields strings in member-name position
			if _, dup := object[name]; dup {
				return nil, fmt.Errorf("duplicate member %q", name)
			}
			if object[name], err = decodeValue(dec); err != nil {
				return nil, err
			}
		}
		return object, closing(dec)
	case json.Delim('['):
		array := []any{}
		for dec.More() {
			item, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			array = append(array, item)
		}
		return array, closing(dec)
	}
	return tok, nil // a string, json.Number, bool or nil
}

// closing reads the '}' or ']' that ends the object or array just read.
func closing(dec *json.Decoder) error {
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return nil
}

// canonical is v, a decoded document, in canonical form.
func canonical(v any) ([]byte, error) {
	var out bytes.Buffer
	if err := writeCanonical(&out, v); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// writeCanonical writes v, a decoded document, in canonical form.
func writeCanonical(out *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case map[string]any:
		names := make([]string, 0, len(v))
		for name := range v {
			names = append(names, name)
		}
		slices.Sort(names) // byte order, so the result does not depend on a locale
		out.WriteByte('{')
		for i, name := range names {
			if i > 0 {
				out.WriteByte(',')
			}
			writeString(out, name)
			out.WriteByte(':')
			if err := writeCanonical(out, v[name]); err != nil {
				return err
			}
		}
		out.WriteByte('}')
	case []any:
		out.WriteByte('[')
		for i, item := range v {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := writeCanonical(out, item); err != nil {
				return err
			}
		}
		out.WriteByte(']')
	case string:
		writeString(out, v)
	case json.Number:
		n, err := canonicalNumber(string(v))
		if err != nil {
			return err
		}
		out.WriteString(n)
	case bool:
		out.WriteString(strconv.FormatBool(v))
	case nil:
		out.WriteString("null")
	default: // a float64 would mean a decoder without UseNumber: its digits are already lost
		return fmt.Errorf("idempotency: %T is not a value Decode returns", v)
	}
	return nil
}

// writeString writes s as encoding/json does without HTML escaping. Most names and values
// need no escape, and for those its output is s in quotes: writing that directly spares an
// encoder per string, and the bytes, which earlier fingerprints were made of, stay the same.
func writeString(out *bytes.Buffer, s string) {
	if !needsEscape(s) {
		out.WriteByte('"')
		out.WriteString(s)
		out.WriteByte('"')
		return
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // encoding a string cannot fail
	out.Truncate(out.Len() - 1) // Encode appends a newline
}

// needsEscape reports whether s may need escaping: control characters, '"' and '\\' do, and
// anything beyond ASCII is left to encoding/json (it replaces invalid UTF-8 and escapes
// U+2028 and U+2029).
func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// canonicalNumber writes a JSON number as <digits>e<exponent> with no leading or trailing
// zeros in the digits: 5000, 5000.0, 5e3 and 50e2 all become "5e3"; 0 and -0 become "0".
func canonicalNumber(n string) (string, error) {
	neg := strings.HasPrefix(n, "-")
	n = strings.TrimPrefix(n, "-")
	mantissa, expPart, _ := strings.Cut(strings.ToLower(n), "e")
	intPart, fracPart, _ := strings.Cut(mantissa, ".")
	exp := int64(0)
	if expPart != "" {
		var err error
		if exp, err = strconv.ParseInt(expPart, 10, 64); err != nil || exp > 1e9 || exp < -1e9 {
			return "", fmt.Errorf("number %s is out of range", n)
		}
	}
	digits := strings.TrimLeft(intPart+fracPart, "0")
	exp -= int64(len(fracPart))
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	if trimmed == "" {
		return "0", nil
	}
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + trimmed + "e" + strconv.FormatInt(exp, 10), nil
}
