package handlers_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/contract"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// maxProblemBytes bounds every problem answer, whatever the request held.
const maxProblemBytes = 16 << 10

// hostileBodies are the request bodies that once cost seconds, gigabytes or a 500, by name.
// The fuzz targets start from them too.
func hostileBodies() map[string]string {
	valid := `"amount":100,"currency":"usd","payment_method":"pm_card_visa"`
	return map[string]string{
		"500 metadata names over 40 characters": `{` + valid + `,"metadata":` + members(500, 45) + `}`,
		"80,000 unknown members":                `{` + valid + `,` + strings.TrimPrefix(members(80000, 6), "{"),
		"8,000 levels of nesting":               `{` + valid + `,"metadata":` + strings.Repeat(`[`, 8000) + strings.Repeat(`]`, 8000) + `}`,
		"NUL in the description":                `{` + valid + `,"description":"a\u0000b"}`,
		"NUL in a metadata key":                 `{` + valid + `,"metadata":{"k\u0000":"v"}}`,
		"NUL in a metadata value":               `{` + valid + `,"metadata":{"k":"a\u0000"}}`,
		"a lone surrogate":                      `{` + valid + `,"description":"\ud800"}`,
		"an exponent of a million":              `{"amount":1e999999,"currency":"usd","payment_method":"pm_card_visa"}`,
	}
}

// TestHostileRequests sends each hostile body through the real server: each is refused at
// once with a small problem that names the field, and nothing is written.
func TestHostileRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	want := map[string]struct {
		field   string
		listed  int
		omitted float64
	}{
		"500 metadata names over 40 characters": {"", contract.MaxFieldErrors, 481},
		"80,000 unknown members":                {"", contract.MaxFieldErrors, 80000 - contract.MaxFieldErrors},
		"8,000 levels of nesting":               {"/metadata" + strings.Repeat("/0", contract.MaxDepth-1), 1, 0},
		"NUL in the description":                {"/description", 1, 0},
		"NUL in a metadata key":                 {"/metadata", 1, 0},
		"NUL in a metadata value":               {"/metadata/k", 1, 0},
		"a lone surrogate":                      {"/description", 1, 0},
		"an exponent of a million":              {"/amount", 1, 0},
	}
	for name, body := range hostileBodies() {
		t.Run(name, func(t *testing.T) {
			for _, req := range []struct{ method, path string }{{http.MethodPost, "/payments"}, {http.MethodPost, "/refunds"}} {
				start := time.Now()
				res := b.client.Do(req.method, req.path, body, apitest.Header("Idempotency-Key", newKey()))
				elapsed := time.Since(start)
				prob := res.Problem(t)
				if res.Status != http.StatusBadRequest || prob.Type != "/problems/invalid-request" {
					t.Fatalf("%s: %d %.300s", req.path, res.Status, res.Body)
				}
				if elapsed > 2*time.Second*raceSlowdown { // a hang guard: the real figures are benchmarks
					t.Errorf("%s: answered after %v", req.path, elapsed)
				}
				if len(res.Body) > maxProblemBytes {
					t.Errorf("%s: a %d-byte problem", req.path, len(res.Body))
				}
				if req.path != "/payments" {
					continue // refund bodies differ in their other members; the count is for payments
				}
				w := want[name]
				omitted, _ := prob.Raw["errors_omitted"].(float64)
				if len(prob.Errors) != w.listed || omitted != w.omitted {
					t.Errorf("%d errors listed, %v omitted; want %d and %v", len(prob.Errors), omitted, w.listed, w.omitted)
				}
				if w.field != "" && !slices.Contains(fieldsOf(prob), w.field) {
					t.Errorf("errors name %.200v, want %s", fieldsOf(prob), w.field)
				}
			}
		})
	}
	for _, table := range []string{"payments", "refunds", "idempotency_keys", "events"} {
		if got := b.count(t, `SELECT count(*) FROM `+table); got != 0 {
			t.Errorf("%d rows in %s after hostile requests", got, table)
		}
	}
}

// TestHostileStringsInAPatch: a PATCH is checked like a POST; the payment is left alone.
func TestHostileStringsInAPatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p, tag := createPayment(t, b.client, 100)
	for _, body := range []string{`{"description":"a\u0000b"}`, `{"metadata":{"k":"\udfff"}}`, `{"metadata":{"\u0000":"v"}}`} {
		res := patchPayment(b.client, p.ID, tag, body, apitest.Header("Content-Type", "application/merge-patch+json"))
		if res.Status != http.StatusBadRequest || res.Problem(t).Type != "/problems/invalid-request" {
			t.Errorf("PATCH %s: %d %s", body, res.Status, res.Body)
		}
	}
	assertPayment(t, b.client, p.ID, tag, nil)
}

// TestNoRouteNeverReachesAHandler: a path the spec does not have is answered 404 by the
// validator, even where echo's router matches it (/payments/:id with id "/pay_..."), and
// nothing changes. Without If-Match the handler would answer 428: a 404 shows it never ran.
func TestNoRouteNeverReachesAHandler(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p, tag := createPayment(t, b.client, 100)
	withoutIfMatch := func(*http.Request) {}
	for _, opt := range []apitest.Option{apitest.Header("If-Match", tag), withoutIfMatch} {
		res := b.client.Patch("/payments//"+p.ID, `{"amount":1,"description":"bypass"}`, opt)
		if res.Status != http.StatusNotFound || res.Problem(t).Type != "/problems/not-found" {
			t.Errorf("PATCH /payments//%s: %d %s", p.ID, res.Status, res.Body)
		}
	}
	assertPayment(t, b.client, p.ID, tag, nil)
	if got := b.count(t, `SELECT count(*) FROM events WHERE type = 'payment.updated'`); got != 0 {
		t.Errorf("%d payment.updated events", got)
	}
}

// TestAnEscapedIDIsTheID: a percent-escaped character in a path is the character (RFC 3986,
// section 6.2.2.2), so /payments/%70ay_... names the payment /payments/pay_... does, for a
// read and for a PATCH alike; an escaped slash is still no id.
func TestAnEscapedIDIsTheID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p, tag := createPayment(t, b.client, 100)
	escaped := "/payments/%70ay" + strings.Replace(strings.TrimPrefix(p.ID, "pay"), "_", "%5F", 1)
	if res := b.client.Get(escaped); res.Status != http.StatusOK || res.Header.Get("ETag") != tag {
		t.Errorf("GET %s: %d ETag %q, want 200 %q: %s", escaped, res.Status, res.Header.Get("ETag"), tag, res.Body)
	}
	res := b.client.Patch(escaped, `{"description":"escaped"}`, apitest.Header("If-Match", tag),
		apitest.Header("Content-Type", "application/merge-patch+json"))
	if res.Status != http.StatusOK {
		t.Fatalf("PATCH %s: %d %s", escaped, res.Status, res.Body)
	}
	description := "escaped"
	assertPayment(t, b.client, p.ID, res.Header.Get("ETag"), &description)
	if res := b.client.Get("/payments/pay%2F" + strings.TrimPrefix(p.ID, "pay_")); res.Status != http.StatusBadRequest {
		t.Errorf("GET an id with an escaped slash: %d %s", res.Status, res.Body)
	}
}

// TestProblemsEchoLittle: a long path is not echoed as the problem's instance.
func TestProblemsEchoLittle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for path, status := range map[string]int{
		"/no-such-route/" + strings.Repeat("a", 4096): http.StatusNotFound,
		"/payments/pay_" + strings.Repeat("a", 4096):  http.StatusBadRequest, // ids are at most 64 characters
	} {
		res := b.client.Get(path)
		prob := res.Problem(t)
		if res.Status != status || len(res.Body) > 1024 {
			t.Errorf("%.40s...: %d, %d bytes", path, res.Status, len(res.Body))
		}
		if _, ok := prob.Raw["instance"]; ok {
			t.Errorf("instance echoes a %d-byte path", len(path))
		}
	}
	if got := b.client.Get("/payments/pay_unknown").Problem(t).Raw["instance"]; got != "/payments/pay_unknown" {
		t.Errorf("a short path: instance %v", got)
	}
}

// TestContentTypeCharset: a body is read as UTF-8, so another charset is refused, not misread.
func TestContentTypeCharset(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := `{"amount":100,"currency":"usd","payment_method":"pm_card_visa"}`
	for contentType, status := range map[string]int{
		"application/json; charset=utf-16":     http.StatusUnsupportedMediaType,
		"application/json; charset=iso-8859-1": http.StatusUnsupportedMediaType,
		"application/json; charset=UTF-8":      http.StatusCreated,
	} {
		res := b.client.Post("/payments", body, apitest.Header("Content-Type", contentType), apitest.Header("Idempotency-Key", newKey()))
		if res.Status != status {
			t.Errorf("%s: %d %s, want %d", contentType, res.Status, res.Body, status)
		}
	}
}

// TestValidationMessages: what a person reads, for the cases a review found unreadable.
func TestValidationMessages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.client.Post("/payments", `{"amount":100000000000000000000,"currency":"usd","payment_method":"pm_card_visa"}`,
		apitest.Header("Idempotency-Key", newKey()))
	if msg := messageFor(t, res, "/amount"); msg != "must be at most 99999999; got 100000000000000000000" {
		t.Errorf("amount: %q", msg)
	}
	res = b.client.Get("/payments?created_gte=yesterday")
	if msg := messageFor(t, res, "created_gte"); msg != "must be an RFC 3339 timestamp such as 2026-01-02T15:04:05Z, with at most nine digits of a second" {
		t.Errorf("created_gte: %q", msg)
	}
	res = b.client.Post("/payments", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa"}`,
		apitest.Header("Idempotency-Key", strings.Repeat("k", 300)))
	if p := res.Problem(t); p.Type != "/problems/invalid-idempotency-key" || !strings.Contains(p.Detail, "255") || strings.Contains(p.Detail, "257") {
		t.Errorf("a 300-character key: %s", res.Body)
	}
}

func messageFor(t *testing.T, res *apitest.Response, field string) string {
	t.Helper()
	for _, e := range res.Problem(t).Errors {
		if e["field"] == field {
			msg, _ := e["message"].(string)
			return msg
		}
	}
	t.Errorf("no error names %s: %s", field, res.Body)
	return ""
}

// members is a JSON object of n members whose names are nameLen characters long.
func members(n, nameLen int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%0*d":"v"`, nameLen, i)
	}
	b.WriteByte('}')
	return b.String()
}
