package idempotency

import (
	"strings"

	"github.com/payments-api/payments-api/internal/domain"
)

// MaxKeyLength is the longest key accepted, as Stripe does.
const MaxKeyLength = 255

// ParseKey reads an Idempotency-Key header value. The IETF draft
// (draft-ietf-httpapi-idempotency-key-header) makes it a structured-field string,
// `"8e03978e-40d5"`; most clients send the bare value, `8e03978e-40d5`. Both name the same
// key. The key is 1-255 printable ASCII characters.
func ParseKey(header string) (string, error) {
	key := header
	if strings.HasPrefix(header, `"`) {
		var ok bool
		if key, ok = unquoteSFString(header); !ok {
			return "", &domain.InvalidIdempotencyKeyError{Reason: "a quoted key must be one structured-field string"}
		}
	}
	switch {
	case key == "":
		return "", &domain.InvalidIdempotencyKeyError{Reason: "the key is empty"}
	case len(key) > MaxKeyLength:
		return "", &domain.InvalidIdempotencyKeyError{Reason: "the key is longer than 255 characters"}
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return "", &domain.InvalidIdempotencyKeyError{Reason: "the key must be printable ASCII"}
		}
	}
	return key, nil
}

// unquoteSFString parses an RFC 8941 sf-string: DQUOTE *chr DQUOTE, where the only escapes
// are \" and \\.
func unquoteSFString(s string) (string, bool) {
	if len(s) < 2 || s[len(s)-1] != '"' {
		return "", false
	}
	var b strings.Builder
	inner := s[1 : len(s)-1]
	for i := 0; i < len(inner); i++ {
		switch c := inner[i]; c {
		case '\\':
			i++
			if i == len(inner) || (inner[i] != '"' && inner[i] != '\\') {
				return "", false
			}
			b.WriteByte(inner[i])
		case '"':
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}
