package contract

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const createBody = `{"amount":2500,"currency":"usd","payment_method":"pm_card_visa"}`

func load(tb testing.TB) *Contract {
	tb.Helper()
	c, err := Load()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// call is a request as the server's middleware hands it over: the body already read.
type call struct {
	method, target, contentType, body string
	headers                           []string // name, value, name, value...
}

func (r call) validate(c *Contract) (*Request, error) {
	req := httptest.NewRequestWithContext(context.Background(), r.method, r.target, nil)
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	for i := 0; i+1 < len(r.headers); i += 2 {
		req.Header.Add(r.headers[i], r.headers[i+1]) // a name given twice is sent as two lines
	}
	return c.ValidateRequest(req, []byte(r.body))
}

func get(target string) call { return call{method: http.MethodGet, target: target} }

func createPayment(body string) call {
	return call{http.MethodPost, "/payments", "application/json", body, []string{"Idempotency-Key", "k-1"}}
}

// invalid validates and returns the *Error, failing the test on any other outcome.
func invalid(t *testing.T, c *Contract, r call) *Error {
	t.Helper()
	_, err := r.validate(c)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want a field error", err)
	}
	return e
}

// TestSchemasCompiledOnce: validating requests compiles nothing and allocates little. A
// per-request compile (what kin-openapi does for OpenAPI 3.1) costs thousands of allocations.
func TestSchemasCompiledOnce(t *testing.T) {
	c := load(t)
	before := schemasCompiled.Load()
	if before == 0 {
		t.Fatal("no schema was compiled at load")
	}
	for range 50 {
		if _, err := createPayment(createBody).validate(c); err != nil {
			t.Fatal(err)
		}
		if _, err := get("/payments?limit=5&status=succeeded").validate(c); err != nil {
			t.Fatal(err)
		}
	}
	if after := schemasCompiled.Load(); after != before {
		t.Errorf("%d schemas compiled while validating requests", after-before)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := createPayment(createBody).validate(c); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 200 {
		t.Errorf("validating a create allocates %.0f times, want at most 200", allocs)
	}
}

func TestValidRequests(t *testing.T) {
	c := load(t)
	for _, tt := range []struct {
		name string
		call call
	}{
		{"create", createPayment(createBody)},
		{"an emoji as a surrogate pair", createPayment(`{"amount":1,"currency":"usd","payment_method":"pm_card_visa","description":"\ud83d\ude00"}`)},
		{"an escaped backslash before u0000", createPayment(`{"amount":1,"currency":"usd","payment_method":"pm_card_visa","description":"\\u0000"}`)},
		{"charset=UTF-8", call{http.MethodPost, "/payments", "application/json; charset=UTF-8", createBody, []string{"Idempotency-Key", "k"}}},
		{"merge patch", call{http.MethodPatch, "/payments/pay_1", "Application/Merge-Patch+JSON", `{"metadata":{"a":null}}`, []string{"If-Match", `"v1"`}}},
		{"list", get("/payments?limit=100&created_gte=2026-01-02T15:04:05Z")},
	} {
		if _, err := tt.call.validate(c); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// TestMessages: what a person reads names the rule, in plain numbers and words.
func TestMessages(t *testing.T) {
	c := load(t)
	tests := []struct {
		name         string
		call         call
		field, want  string
		mustNotEqual string // text the message must not hold
	}{
		{"a huge amount", createPayment(`{"amount":1e20,"currency":"usd","payment_method":"pm_card_visa"}`),
			"/amount", "must be at most 99999999; got 100000000000000000000", "e+"},
		{"a bad timestamp", get("/payments?created_gte=yesterday"),
			"created_gte", "must be an RFC 3339 timestamp such as 2026-01-02T15:04:05Z, with at most nine digits of a second", "^"},
		{"a limit of 0", get("/payments?limit=0"), "limit", "must be at least 1; got 0", ""},
		{"a limit in words", get("/payments?limit=ten"), "limit", "must be an integer", ""},
		{"a limit sent twice", get("/payments?limit=1&limit=2"), "limit", "must be sent once", ""},
		// Pairs url.ParseQuery drops, which would leave the filter out.
		{"a broken escape", get("/payments?status=failed%"), "status", "must be percent-encoded: a % begins an escape such as %25", ""},
		{"a semicolon", get("/payments?limit=1;x=y"), "limit", "must not hold a semicolon: separate parameters with &", ""},
		{"an Idempotency-Key sent twice", call{http.MethodPost, "/payments", "application/json", createBody,
			[]string{"Idempotency-Key", "k-1", "Idempotency-Key", "k-2"}}, "Idempotency-Key", "must be sent once", ""},
		{"a Content-Type sent twice", call{http.MethodPost, "/payments", "application/json", createBody,
			[]string{"Idempotency-Key", "k-1", "Content-Type", "text/plain"}}, "Content-Type", "must be sent once", ""},
		{"a missing member", createPayment(`{"currency":"usd","payment_method":"pm_card_visa"}`), "/amount", "is required", ""},
		{"an unknown member", createPayment(`{"amount":1,"currency":"usd","payment_method":"pm_card_visa","x":1}`), "/x", "unknown field", ""},
		{"a currency in capitals", createPayment(`{"amount":1,"currency":"USD","payment_method":"pm_card_visa"}`),
			"/currency", `must be a lowercase ISO 4217 currency code: use "usd"`, "USD"},
		{"an unknown currency", createPayment(`{"amount":1,"currency":"xyz","payment_method":"pm_card_visa"}`),
			"/currency", fmt.Sprintf(`must be a lowercase ISO 4217 currency code such as "usd" or "eur" (the spec lists all %d)`,
				len(c.Spec().Components.Schemas["Currency"].Value.Enum)), "xyz"},
		{"a status filter in capitals", get("/payments?status=SUCCEEDED"), "status", `must be lowercase: use "succeeded"`, "SUCCEEDED"},
		{"an unknown status filter", get("/payments?status=paid"), "status",
			"must be one of succeeded, failed, refunded, partially_refunded", "paid"},
		{"a long metadata key", createPayment(`{"amount":1,"currency":"usd","payment_method":"pm_card_visa","metadata":{"` + strings.Repeat("k", 41) + `":"v"}}`),
			"/metadata/" + strings.Repeat("k", 41), "invalid member name: must be at most 40 characters long; got 41", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := invalid(t, c, tt.call)
			if len(e.Fields) != 1 || e.Fields[0].Field != tt.field || e.Fields[0].Message != tt.want {
				t.Fatalf("errors %+v, want %s: %s", e.Fields, tt.field, tt.want)
			}
			if tt.mustNotEqual != "" && strings.Contains(e.Fields[0].Message, tt.mustNotEqual) {
				t.Errorf("message %q holds %q", e.Fields[0].Message, tt.mustNotEqual)
			}
		})
	}
}

// TestHostileBodies: every body a robustness review found costly or unsafe is refused with a bounded
// answer that names where the problem is.
func TestHostileBodies(t *testing.T) {
	c := load(t)
	valid := `"amount":1,"currency":"usd","payment_method":"pm_card_visa"`
	longName := strings.Repeat("n", 1<<20)
	tests := []struct {
		name    string
		body    string
		field   string // the first field error, when set
		message string // text that error's message holds
		listed  int
		omitted int
	}{
		{"500 metadata names over 40 characters", `{` + valid + `,"metadata":` + manyMembers(500, 45) + `}`, "", "", MaxFieldErrors, 481},
		{"80,000 unknown members", `{` + valid + `,` + strings.TrimPrefix(manyMembers(80000, 6), "{"), "", "", MaxFieldErrors, 80000 - MaxFieldErrors},
		{"8,000 levels of nesting", `{` + valid + `,"metadata":` + strings.Repeat(`[`, 8000) + strings.Repeat(`]`, 8000) + `}`,
			"/metadata" + strings.Repeat("/0", MaxDepth-1), "nested deeper than 32 levels", 1, 0},
		{"NUL in a description", `{` + valid + `,"description":"a\u0000b"}`, "/description", "NUL", 1, 0},
		{"NUL in a metadata value", `{` + valid + `,"metadata":{"k":"\u0000"}}`, "/metadata/k", "NUL", 1, 0},
		{"NUL in a metadata key", `{` + valid + `,"metadata":{"k\u0000":"v"}}`, "/metadata", "a member name contains the NUL", 1, 0},
		{"a lone high surrogate", `{` + valid + `,"description":"\ud800"}`, "/description", "lone UTF-16 surrogate", 1, 0},
		{"a high surrogate before a non-surrogate", `{` + valid + `,"description":"\ud800\u0041"}`, "/description", "lone UTF-16 surrogate", 1, 0},
		{"a lone low surrogate", `{` + valid + `,"description":"x\uDC00"}`, "/description", "lone UTF-16 surrogate", 1, 0},
		{"bytes that are not UTF-8", `{` + valid + `,"description":"` + "\xff\xfe" + `"}`, "/description", "not valid UTF-8", 1, 0},
		{"a 1 MB member name", `{` + valid + `,"` + longName + `":1}`, "/" + strings.Repeat("n", MaxEchoLength-1) + "…", "unknown field", 1, 0},
		{"a number with a huge exponent", `{"amount":1e999999,"currency":"usd","payment_method":"pm_card_visa"}`, "/amount", "exponent", 1, 0},
		{"a 100-digit number", `{"amount":` + strings.Repeat("9", 100) + `,"currency":"usd","payment_method":"pm_card_visa"}`, "/amount", "longer than 64", 1, 0},
		{"a duplicate member", `{` + valid + `,"amount":2}`, "/", `duplicate member "amount"`, 1, 0},
		{"malformed JSON", `{"amount":`, "/", "not valid JSON", 1, 0},
		{"a byte order mark", "\xEF\xBB\xBF{" + valid + `}`, "/", "byte order mark", 1, 0},
		{"two JSON values", `{` + valid + `} {}`, "/", "follows the JSON value", 1, 0},
		// Found by FuzzBodies: a broken body whose scan names a member written with a raw NUL.
		{"a raw NUL in a member name", `{` + strings.Repeat(`"`, 10) + `,"` + "\x00" + strings.Repeat(`"`, 4) + `\u0000`, "/\uFFFD", "NUL", 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := invalid(t, c, createPayment(tt.body))
			if len(e.Fields) != tt.listed || e.Omitted != tt.omitted {
				t.Errorf("%d errors listed, %d omitted; want %d and %d", len(e.Fields), e.Omitted, tt.listed, tt.omitted)
			}
			if tt.field != "" && e.Fields[0].Field != tt.field {
				t.Errorf("field %.80q, want %.80q", e.Fields[0].Field, tt.field)
			}
			if !strings.Contains(e.Fields[0].Message, tt.message) && !strings.Contains(e.Summary, tt.message) {
				t.Errorf("message %q (summary %q), want it to mention %q", e.Fields[0].Message, e.Summary, tt.message)
			}
			for _, f := range e.Fields {
				if len(f.Field) > MaxEchoLength+len("…") || len(f.Message) > MaxEchoLength+len("…") {
					t.Errorf("an error echoes %d + %d bytes", len(f.Field), len(f.Message))
				}
				if strings.ContainsFunc(f.Field, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
					t.Errorf("field %q holds a control character", f.Field)
				}
			}
		})
	}
}

// TestManyErrorsAreListedAlikeEveryTime: the validator walks an object's members in map
// order; a request with more errors than MaxFieldErrors still gets the same ones listed, in
// the same order, every time it is sent, so that a client's test can compare them.
func TestManyErrorsAreListedAlikeEveryTime(t *testing.T) {
	c := load(t)
	valid := `"amount":1,"currency":"usd","payment_method":"pm_card_visa"`
	for name, body := range map[string]string{
		"unknown members":       `{` + valid + `,` + strings.TrimPrefix(manyMembers(300, 6), "{"),
		"long metadata names":   `{` + valid + `,"metadata":` + manyMembers(300, 45) + `}`,
		"errors in many places": `{"amount":"x","currency":1,"payment_method":2,"description":3,"metadata":` + manyMembers(60, 45) + `,` + strings.TrimPrefix(manyMembers(60, 7), "{"),
	} {
		first := invalid(t, c, createPayment(body))
		for range 10 {
			if again := invalid(t, c, createPayment(body)); !slices.Equal(again.Fields, first.Fields) {
				t.Fatalf("%s: the errors listed changed between two validations of the same body:\n%v\n%v", name, first.Fields, again.Fields)
			}
		}
	}
}

// TestMemoryOfManyBadNames: the 500-name body that once grew the process by gigabytes
// allocates a small multiple of its own size.
func TestMemoryOfManyBadNames(t *testing.T) {
	c := load(t)
	body := `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","metadata":` + manyMembers(500, 45) + `}`
	const runs = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if e := invalid(t, c, createPayment(body)); e.Omitted != 481 {
			t.Fatalf("%d errors omitted, want 481", e.Omitted)
		}
	}
	runtime.ReadMemStats(&after)
	perRequest := (after.TotalAlloc - before.TotalAlloc) / runs
	if limit := uint64(64 * len(body)); perRequest > limit {
		t.Errorf("a %d-byte body allocates %d bytes, want at most %d", len(body), perRequest, limit)
	}
	t.Logf("a %d-byte body allocates %d bytes", len(body), perRequest)
}

func TestMediaTypesAndRoutes(t *testing.T) {
	c := load(t)
	var media *MediaTypeError
	utf16 := call{http.MethodPost, "/payments", "application/json; charset=utf-16", createBody, []string{"Idempotency-Key", "k"}}
	if _, err := utf16.validate(c); !errors.As(err, &media) || !strings.Contains(media.Detail, "UTF-8") {
		t.Errorf("charset=utf-16: %v, want a media type error asking for UTF-8", err)
	}
	text := call{http.MethodPost, "/payments", "text/plain", createBody, []string{"Idempotency-Key", "k"}}
	if _, err := text.validate(c); !errors.As(err, &media) || !strings.Contains(media.Detail, "application/json") {
		t.Errorf("text/plain: %v, want a media type error naming application/json", err)
	}
	gzipped := call{http.MethodPost, "/payments", "application/json", createBody, []string{"Idempotency-Key", "k", "Content-Encoding", "gzip"}}
	if _, err := gzipped.validate(c); !errors.As(err, &media) || !strings.Contains(media.Detail, "Content-Encoding") {
		t.Errorf("Content-Encoding: gzip: %v, want a media type error naming Content-Encoding", err)
	}
	identity := call{http.MethodPost, "/payments", "application/json", createBody, []string{"Idempotency-Key", "k", "Content-Encoding", "identity"}}
	if _, err := identity.validate(c); err != nil {
		t.Errorf("Content-Encoding: identity: %v, want the body read", err)
	}
	unrouted := call{http.MethodPatch, "/payments//pay_X", "application/json", `{"amount":1}`, nil}
	if _, err := unrouted.validate(c); !errors.Is(err, ErrNoRoute) {
		t.Errorf("PATCH /payments//pay_X: %v, want ErrNoRoute", err)
	}
	var methods *MethodNotAllowedError
	if _, err := (call{method: http.MethodDelete, target: "/payments"}).validate(c); !errors.As(err, &methods) || strings.Join(methods.Allow, ",") != "GET,HEAD,OPTIONS,POST" {
		t.Errorf("DELETE /payments: %v, want 405 allowing GET, HEAD, OPTIONS and POST", err)
	}
}

// TestValidateResponse: the tests' response checker refuses what the spec does not document.
func TestValidateResponse(t *testing.T) {
	c := load(t)
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/account", nil)
	h := http.Header{"Content-Type": {"application/json"}, "Request-Id": {"r-1"}, "Server-Timing": {"auth;dur=0.2, total;dur=1.5"}}
	if err := c.ValidateResponse(req, 200, h, []byte(`{"id":"acct_1","created_at":"2026-01-02T15:04:05Z"}`)); err != nil {
		t.Errorf("a valid account: %v", err)
	}
	for name, tt := range map[string]struct {
		status int
		header http.Header
		body   string
	}{
		"an undocumented status":     {418, h, `{}`},
		"a missing required header":  {200, http.Header{"Content-Type": {"application/json"}}, `{"id":"acct_1","created_at":"2026-01-02T15:04:05Z"}`},
		"a body breaking its schema": {200, h, `{"id":"nope","created_at":"2026-01-02T15:04:05Z"}`},
		"an undocumented media type": {200, http.Header{"Content-Type": {"text/plain"}, "Request-Id": {"r"}, "Server-Timing": {"total;dur=1"}}, `x`},
		// x-common-response-headers, checked on every response:
		"no Server-Timing":                   {200, http.Header{"Content-Type": {"application/json"}, "Request-Id": {"r"}}, `{"id":"acct_1","created_at":"2026-01-02T15:04:05Z"}`},
		"a Preference-Applied never applied": {200, withHeader(h, "Preference-Applied", "fault=lost-response"), `{"id":"acct_1","created_at":"2026-01-02T15:04:05Z"}`},
	} {
		if err := c.ValidateResponse(req, tt.status, tt.header, []byte(tt.body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := c.ValidateResponse(httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/nowhere", nil), 200, h, nil); err == nil {
		t.Error("a 200 for an unrouted request: accepted")
	}
}

func withHeader(h http.Header, name, value string) http.Header {
	h = h.Clone()
	h.Set(name, value)
	return h
}

// TestSecuredOperationsTakePrefer: every operation that takes an API key lists the Prefer
// parameter, and documents the answers fault injection can give it (400 for a malformed
// Prefer, 429, 503), so a new operation cannot forget them.
func TestSecuredOperationsTakePrefer(t *testing.T) {
	spec := load(t).Spec()
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Security != nil && len(*op.Security) == 0 {
				continue
			}
			if op.Parameters.GetByInAndName("header", "Prefer") == nil {
				t.Errorf("%s %s does not take the Prefer parameter", method, path)
			}
			for _, status := range []int{400, 429, 503} {
				if op.Responses.Status(status) == nil {
					t.Errorf("%s %s does not document %d", method, path, status)
				}
			}
		}
	}
}

// manyMembers is an object of n members with names of nameLen characters.
func manyMembers(n, nameLen int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		name := fmt.Sprintf("%0*d", nameLen, i)
		b.WriteString(`"` + name + `":"v"`)
	}
	b.WriteByte('}')
	return b.String()
}

// TestListHeadersSentAsSeveralLinesAreOneList: If-Match, If-None-Match and Prefer are lists,
// which a client may send as several field lines (RFC 9110, section 5.3). They are one list
// in order, folded into one line in the request, which the generated binder takes once.
func TestListHeadersSentAsSeveralLinesAreOneList(t *testing.T) {
	c := load(t)
	req := httptest.NewRequestWithContext(context.Background(), http.MethodPatch, "/payments/pay_1", nil)
	req.Header.Set("Content-Type", "application/merge-patch+json")
	req.Header.Add("If-Match", `"v1"`)
	req.Header.Add("If-Match", `"v2", "v3"`)
	req.Header.Add("Prefer", "return=minimal")
	req.Header.Add("Prefer", "handling=strict")
	if _, err := c.ValidateRequest(req, []byte(`{"description":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if got := req.Header["If-Match"]; len(got) != 1 || got[0] != `"v1", "v2", "v3"` {
		t.Errorf("If-Match %q, want one line with the three tags in order", got)
	}
	if got := req.Header["Prefer"]; len(got) != 1 || got[0] != "return=minimal, handling=strict" {
		t.Errorf("Prefer %q, want one line", got)
	}
}
