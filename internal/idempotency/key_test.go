package idempotency

import (
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		header, want string
		ok           bool
	}{
		{"8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{`"8e03978e-40d5"`, "8e03978e-40d5", true}, // IETF structured-field string
		{`"a\"b\\c"`, `a"b\c`, true},               // its only two escapes
		{"with space inside", "with space inside", true},
		{strings.Repeat("k", 255), strings.Repeat("k", 255), true},
		{`"` + strings.Repeat("k", 255) + `"`, strings.Repeat("k", 255), true},
		{"", "", false},
		{`""`, "", false},
		{strings.Repeat("k", 256), "", false},
		{"tab\tinside", "", false},
		{"caf\u00e9", "", false},
		{`"unterminated`, "", false},
		{`"bad \n escape"`, "", false},
		{`"inner " quote"`, "", false},
	}
	for _, tt := range tests {
		got, err := ParseKey(tt.header)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseKey(%q) = %q, %v; want %q, ok=%v", tt.header, got, err, tt.want, tt.ok)
		}
	}
}
