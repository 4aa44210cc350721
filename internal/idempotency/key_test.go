package idempotency

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/payments-api/payments-api/internal/contract"
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

// TestKeySchemaAgreesWithParseKey: api/openapi.yaml's schema of Idempotency-Key accepts
// exactly the header values ParseKey does, so a tool that generates keys from the schema
// never sends one the server refuses, nor expects a refusal the server does not give. The
// values are the boundaries (lengths 1, 255 and 256, bare and quoted, every escape) and
// thousands of random strings over the characters that matter.
func TestKeySchemaAgreesWithParseKey(t *testing.T) {
	spec, err := contract.Load()
	if err != nil {
		t.Fatal(err)
	}
	values := []string{
		"k", strings.Repeat("k", 255), strings.Repeat("k", 256),
		`"k"`, `"` + strings.Repeat("k", 255) + `"`, `"` + strings.Repeat("k", 256) + `"`,
		`"` + strings.Repeat(`\"`, 255) + `"`, `"` + strings.Repeat(`\\`, 256) + `"`,
		`""`, `"`, `"\"`, `"\x"`, `"a"b"`, `a"b`, `"a`, `a"`, ` "a"`, "\x7f", "a\x7fb", "caf\u00e9",
	}
	for c := byte(0); c < 0x80; c++ {
		values = append(values, string([]byte{c}), "a"+string([]byte{c})+"b", `"a`+string([]byte{c})+`b"`)
	}
	random := rand.New(rand.NewPCG(19, 2))
	const alphabet = "ab\"\\ ~\t\x7f\u00e9"
	for range 5000 {
		key := make([]byte, random.IntN(8))
		for i := range key {
			key[i] = alphabet[random.IntN(len(alphabet))]
		}
		values = append(values, string(key), `"`+string(key)+`"`)
	}
	for _, v := range values {
		_, parseErr := ParseKey(v)
		schemaOK := !refusesKey(t, spec, v)
		if schemaOK != (parseErr == nil) {
			t.Errorf("Idempotency-Key %q: the schema accepts it: %v; ParseKey: %v", v, schemaOK, parseErr)
		}
	}
}

// refusesKey reports whether the contract refuses a POST /payments for its Idempotency-Key.
func refusesKey(t *testing.T, spec *contract.Contract, key string) bool {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/payments", nil)
	req.Header.Set("Content-Type", "application/json")
	req.Header["Idempotency-Key"] = []string{key}
	_, err := spec.ValidateRequest(req, []byte(`{"amount":1,"currency":"usd","payment_method":"pm_card_visa"}`))
	var invalid *contract.Error
	if err != nil && !errors.As(err, &invalid) {
		t.Fatalf("Idempotency-Key %q: %v", key, err)
	}
	return err != nil && slices.ContainsFunc(invalid.Fields, func(f contract.FieldError) bool { return f.Field == "Idempotency-Key" })
}
