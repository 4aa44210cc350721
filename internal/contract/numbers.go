package contract

import (
	"encoding/json"
	"strconv"
	"strings"
)

// wholeNumbers rewrites, in a decoded body, every number literal whose value is whole as a
// plain integer: 2500.0, 25e2 and 2.5E3 become 2500. JSON Schema calls them all integers
// (2020-12: an integer is a number with a zero fractional part), so the schema has accepted
// them where it says integer; Go's decoders (encoding/json, oapi-codegen's binder) refuse
// anything but digits for an int64. Rewritten once here, every handler binds what the schema
// accepted. A number that is not whole (2500.5) is left as sent, and so is one whose digits
// would be longer than MaxNumberLength (1e300 is whole, but no Go integer holds it, and
// 300 zeros should not be written out for nothing).
func wholeNumbers(v any) {
	switch v := v.(type) {
	case map[string]any:
		for name, member := range v {
			if n, ok := member.(json.Number); ok {
				v[name] = integerLiteral(n)
			} else {
				wholeNumbers(member)
			}
		}
	case []any:
		for i, item := range v {
			if n, ok := item.(json.Number); ok {
				v[i] = integerLiteral(n)
			} else {
				wholeNumbers(item)
			}
		}
	}
}

// integerLiteral is n as an integer literal if its value is whole and the literal fits in
// MaxNumberLength characters, and n itself otherwise. n is a valid JSON number, whose
// exponent the body's scan has bounded by MaxExponent.
func integerLiteral(n json.Number) json.Number {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		return n // already plain digits
	}
	neg := strings.HasPrefix(s, "-")
	mantissa, expPart, _ := strings.Cut(strings.ToLower(strings.TrimPrefix(s, "-")), "e")
	intPart, fracPart, _ := strings.Cut(mantissa, ".")
	var exp int64
	if expPart != "" {
		var err error
		if exp, err = strconv.ParseInt(expPart, 10, 64); err != nil {
			return n
		}
	}
	// The value is digits × 10^exp, digits without leading or trailing zeros.
	digits := strings.TrimLeft(intPart+fracPart, "0")
	exp -= int64(len(fracPart))
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	switch {
	case trimmed == "":
		return "0" // 0.0, -0e5
	case exp < 0 || int64(len(trimmed))+exp > MaxNumberLength:
		return n // a fraction, or too long to be any Go integer
	}
	literal := trimmed + strings.Repeat("0", int(exp))
	if neg {
		literal = "-" + literal
	}
	return json.Number(literal)
}

// wholeNumber reads a parameter's text that strconv.ParseInt refused as an integer, as a body
// member's would be read: 10.0, 1e1 and 1.0E1 are 10, as in JSON Schema (and as Prism coerces
// a query string), while 10.5, 0x10 and anything but a JSON number are not integers.
func wholeNumber(s string) (int64, bool) {
	if len(s) > MaxNumberLength || !isJSONNumber(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(integerLiteral(json.Number(s))), 10, 64)
	return n, err == nil
}

// isJSONNumber reports whether s is a number as JSON writes one (RFC 8259, section 6): a
// valid JSON text that starts as only a number can, with no whitespace around it.
func isJSONNumber(s string) bool {
	return s != "" && (s[0] == '-' || '0' <= s[0] && s[0] <= '9') && strings.TrimSpace(s) == s && json.Valid([]byte(s))
}
