package payments

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/db"
)

// EncodeResource is the payment's resource as JSON: the bytes json.Marshal(Resource(p))
// gives, written straight from the row. A read is most of what the API serves, and the
// generated type costs a map for each nullable member, a decode and re-encode of the
// metadata, and a reflective walk; this costs one buffer. A test and a fuzz target hold the
// two equal, byte for byte, so the spec's Payment schema still decides what is sent.
func EncodeResource(p db.Payment) ([]byte, error) {
	b := make([]byte, 0, 384)
	b = append(b, `{"amount":`...)
	b = strconv.AppendInt(b, p.Amount, 10)
	b = append(b, `,"amount_refunded":`...)
	b = strconv.AppendInt(b, p.AmountRefunded, 10)
	b = append(b, `,"created_at":`...)
	b = appendTime(b, p.CreatedAt)
	b = append(b, `,"currency":`...)
	b = appendString(b, p.Currency)
	b = append(b, `,"description":`...)
	b = appendNullable(b, p.Description)
	b = append(b, `,"failure_code":`...)
	b = appendNullable(b, p.FailureCode)
	b = append(b, `,"id":`...)
	b = appendString(b, p.ID)
	b = append(b, `,"metadata":`...)
	b, err := appendMetadata(b, p.Metadata)
	if err != nil {
		return nil, fmt.Errorf("decode metadata of %s: %w", p.ID, err)
	}
	b = append(b, `,"object":"payment","payment_method":`...)
	b = appendString(b, p.PaymentMethod)
	b = append(b, `,"status":`...)
	b = appendString(b, p.Status)
	b = append(b, `,"updated_at":`...)
	b = appendTime(b, p.UpdatedAt)
	return append(b, '}'), nil
}

// appendString writes s as json.Marshal does. Ids, codes and most text need no escape, and
// for those that is s in quotes; anything else (quotes, control characters, HTML's <, > and
// &, anything beyond ASCII) is left to encoding/json itself.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			quoted, _ := json.Marshal(s) // encoding a string cannot fail
			return append(b, quoted...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendNullable(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendTime writes t in UTC as time.Time's MarshalJSON does (RFC 3339 with nanoseconds,
// trailing zeros dropped).
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendMetadata writes the stored metadata as the API shows it: keys sorted, compact. The
// column is jsonb, which PostgreSQL returns with its own key order and spacing, so anything
// but the empty object is decoded and encoded again.
func appendMetadata(b []byte, stored []byte) ([]byte, error) {
	if string(stored) == "{}" {
		return append(b, "{}"...), nil
	}
	var metadata api.Metadata
	if err := json.Unmarshal(stored, &metadata); err != nil {
		return nil, err
	}
	encoded, err := json.Marshal(metadata)
	if err != nil {
		return nil, err
	}
	return append(b, encoded...), nil
}
