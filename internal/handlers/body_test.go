package handlers_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/payments-api/payments-api/internal/handlers"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// TestCreatePaymentBodyProblems sends POST /payments bodies that must be refused before any
// work is done: each answers its problem, and none leaves a payment or claims its key.
func TestCreatePaymentBodyProblems(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const valid = `{"amount":2500,"currency":"usd","payment_method":"pm_card_visa"}`
	oversized := `{"amount":2500,"currency":"usd","payment_method":"pm_card_visa","description":"` +
		strings.Repeat("x", handlers.MaxBodyBytes) + `"}`

	tests := []struct {
		name        string
		body        string
		contentType string
		status      int
		typ         string
		field       string // a field errors[] must name, when set
		detail      string // text the problem's detail must hold, when set
	}{
		{"a body over 1 MiB", oversized, "application/json", http.StatusRequestEntityTooLarge, "/problems/payload-too-large", "", "1 MiB"},
		{"text/plain", valid, "text/plain", http.StatusUnsupportedMediaType, "/problems/unsupported-media-type", "", "application/json"},
		{"malformed JSON", `{"amount":2500,"currency":`, "application/json", http.StatusBadRequest, "/problems/invalid-request", "/", ""},
		{"an unknown field", `{"amount":2500,"currency":"usd","payment_method":"pm_card_visa","extra":1}`, "application/json",
			http.StatusBadRequest, "/problems/invalid-request", "/extra", ""},
		// Parsers disagree on which duplicate wins, so the fingerprint has no single body to hash.
		{"a duplicate member", `{"amount":1,"amount":2,"currency":"usd","payment_method":"pm_card_visa"}`, "application/json",
			http.StatusBadRequest, "/problems/invalid-request", "/", "duplicate member"},
		// 2500.0 and 25e2 are integers (see TestIdempotentReplays); this is not.
		{"an amount with a fraction", `{"amount":2500.5,"currency":"usd","payment_method":"pm_card_visa"}`, "application/json",
			http.StatusBadRequest, "/problems/invalid-request", "/amount", ""},
		{"a currency that is not ISO 4217", `{"amount":2500,"currency":"xyz","payment_method":"pm_card_visa"}`, "application/json",
			http.StatusBadRequest, "/problems/invalid-request", "/currency", ""},
		{"a withdrawn currency", `{"amount":2500,"currency":"hrk","payment_method":"pm_card_visa"}`, "application/json",
			http.StatusBadRequest, "/problems/invalid-request", "/currency", ""},
		{"an uppercase currency", `{"amount":2500,"currency":"USD","payment_method":"pm_card_visa"}`, "application/json",
			http.StatusBadRequest, "/problems/invalid-request", "/currency", ""},
	}
	keys := make([]string, len(tests))
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys[i] = newKey()
			res := b.client.Post("/payments", tt.body,
				apitest.Header("Content-Type", tt.contentType), apitest.Header("Idempotency-Key", keys[i]))
			prob := res.Problem(t)
			if res.Status != tt.status || prob.Type != tt.typ {
				t.Fatalf("%d %s, want %d %s", res.Status, res.Body, tt.status, tt.typ)
			}
			if tt.field != "" && !slices.Contains(fieldsOf(prob), tt.field) {
				t.Errorf("errors name %v, want %s", fieldsOf(prob), tt.field)
			}
			if !strings.Contains(prob.Detail, tt.detail) {
				t.Errorf("detail %q, want it to mention %q", prob.Detail, tt.detail)
			}
		})
	}

	for _, table := range []string{"payments", "idempotency_keys", "events"} {
		if got := b.count(t, `SELECT count(*) FROM `+table); got != 0 {
			t.Errorf("%d rows in %s after refused requests", got, table)
		}
	}
	// No refused request used up its key: each key still works for a valid body.
	for i, key := range keys {
		res := b.client.Post("/payments", valid, apitest.Header("Idempotency-Key", key))
		if res.Status != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != "" {
			t.Errorf("key of %q: %d replayed=%q", tests[i].name, res.Status, res.Header.Get("Idempotent-Replayed"))
		}
	}
}

// TestCurrencyErrorIsShort: the currency enum has over a hundred values; a field error must
// say what to send without spelling out every one, and answer a code in capitals with the
// code the spec lists.
func TestCurrencyErrorIsShort(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tt := range []struct{ currency, want string }{
		{"USD", `must be a lowercase ISO 4217 currency code: use "usd"`},
		{"xyz", `must be a lowercase ISO 4217 currency code such as "usd" or "eur" (the spec lists all `},
	} {
		res := b.client.Post("/payments", `{"amount":2500,"currency":"`+tt.currency+`","payment_method":"pm_card_visa"}`,
			apitest.Header("Idempotency-Key", newKey()))
		prob := res.Problem(t)
		if res.Status != http.StatusBadRequest || len(prob.Errors) != 1 {
			t.Fatalf("%s: %d %s", tt.currency, res.Status, res.Body)
		}
		msg, _ := prob.Errors[0]["message"].(string)
		if prob.Errors[0]["field"] != "/currency" || !strings.HasPrefix(msg, tt.want) || len(msg) > 100 {
			t.Errorf("%s: field error %v, want %q", tt.currency, prob.Errors[0], tt.want)
		}
	}
}

// TestA415SaysWhatWouldBeRead: a PATCH's 415 names the patch formats in Accept-Patch, and so
// does OPTIONS on a path that takes PATCH (RFC 5789); a body sent with a content coding gets
// Accept-Encoding: identity (RFC 9110).
func TestA415SaysWhatWouldBeRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const formats = "application/json, application/merge-patch+json"
	patch := b.client.Patch("/payments/pay_x", "description=x", apitest.Header("Content-Type", "text/plain"), apitest.Header("If-Match", `"v1"`))
	if patch.Status != http.StatusUnsupportedMediaType || patch.Header.Get("Accept-Patch") != formats {
		t.Errorf("PATCH in text/plain: %d Accept-Patch %q, want 415 with %q", patch.Status, patch.Header.Get("Accept-Patch"), formats)
	}
	gzipped := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()), apitest.Header("Content-Encoding", "gzip"))
	if gzipped.Status != http.StatusUnsupportedMediaType || gzipped.Header.Get("Accept-Encoding") != "identity" || gzipped.Header.Get("Accept-Patch") != "" {
		t.Errorf("POST with Content-Encoding: gzip: %d Accept-Encoding %q Accept-Patch %q, want 415 with identity alone",
			gzipped.Status, gzipped.Header.Get("Accept-Encoding"), gzipped.Header.Get("Accept-Patch"))
	}
	for path, want := range map[string]string{"/payments/pay_x": formats, "/webhook-endpoints/we_x": formats, "/payments": ""} {
		if res := b.client.Do(http.MethodOptions, path, nil, apitest.NoAuth()); res.Header.Get("Accept-Patch") != want {
			t.Errorf("OPTIONS %s: Accept-Patch %q, want %q", path, res.Header.Get("Accept-Patch"), want)
		}
	}
}
