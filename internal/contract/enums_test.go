package contract

import (
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// TestEnumMessage: an enum error says what to send, quoting only the spec's values.
func TestEnumMessage(t *testing.T) {
	statuses := []any{"succeeded", "failed", "refunded"}
	many := make([]any, 0, 20)
	for _, s := range strings.Fields("aed eur gbp jpy usd chf cad aud nzd sek nok dkk pln czk") {
		many = append(many, s)
	}
	currency := enumNote{title: "ISO 4217 currency code", examples: []string{"usd", "eur"}}
	tests := []struct {
		name string
		got  any
		want []any
		note enumNote
		msg  string
	}{
		{"a short enum", "pending", statuses, enumNote{}, "must be one of succeeded, failed, refunded"},
		{"a short enum in capitals", "SUCCEEDED", statuses, enumNote{}, `must be lowercase: use "succeeded"`},
		{"a short enum in mixed case", "Failed", statuses, enumNote{}, `must be lowercase: use "failed"`},
		{"a nullable lowercase enum", "FAILED", []any{"failed", nil}, enumNote{}, `must be lowercase: use "failed"`},
		{"an enum that is not all lowercase", "FOO", []any{"Foo", "bar"}, enumNote{}, "must be one of Foo, bar"},
		{"a number", 1, statuses, enumNote{}, "must be one of succeeded, failed, refunded"},
		{"a long titled enum in capitals", "USD", many, currency, `must be a lowercase ISO 4217 currency code: use "usd"`},
		{"a long titled enum", "xyz", many, currency, `must be a lowercase ISO 4217 currency code such as "usd" or "eur" (the spec lists all 14)`},
		{"a long titled enum, three examples", "xyz", many,
			enumNote{title: "ISO 4217 currency code", examples: []string{"usd", "eur", "gbp", "jpy"}},
			`must be a lowercase ISO 4217 currency code such as "usd", "eur" or "gbp" (the spec lists all 14)`},
		{"a long titled enum without examples", "xyz", many, enumNote{title: "ISO 4217 currency code"},
			"must be a lowercase ISO 4217 currency code (the spec lists all 14)"},
		{"a long titled enum not in lowercase", "xyz", append([]any{"USD"}, many...), currency,
			`must be an ISO 4217 currency code such as "usd" or "eur" (the spec lists all 15)`},
		{"a long enum without a title", "USD", many, enumNote{}, `must be lowercase: use "usd"`},
		{"a long enum without a title, unknown value", "xyz", many, enumNote{},
			"must be one of the 14 values the spec lists for this field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := enumMessage(&kind.Enum{Got: tt.got, Want: tt.want}, tt.note); got != tt.msg {
				t.Errorf("got  %s\nwant %s", got, tt.msg)
			}
		})
	}
}
