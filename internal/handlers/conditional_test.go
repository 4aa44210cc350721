package handlers_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// malformedTags are If-Match / If-None-Match values that are neither * nor a list of quoted
// entity tags (RFC 9110 §8.8.3): each must be a 400 naming the header, never a 412 or 304.
var malformedTags = []string{
	`v1`,          // the documented tag without its quotes
	`""v1""`,      // the quotes pasted twice
	`'v1'`,        // single quotes
	`"v1`,         // no closing quote
	`W/v1`,        // weak, unquoted
	`w/"v1"`,      // the weak prefix is case-sensitive
	`"v1" "v2"`,   // no comma between tags
	`*, "v1"`,     // * stands alone
	`"v 1"`,       // a space inside a tag
	`, ,`,         // a list with no tag in it
	`garbage!@#$`, // anything
}

func TestMalformedEntityTagsAre400(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p, tag := createPayment(t, b.client, 1200)

	for _, value := range malformedTags {
		t.Run(value, func(t *testing.T) {
			res := patchPayment(b.client, p.ID, value, `{"description":"changed"}`)
			assertNamesHeader(t, "PATCH If-Match", res, "If-Match")

			res = b.client.Get("/payments/"+p.ID, apitest.Header("If-None-Match", value))
			assertNamesHeader(t, "GET If-None-Match", res, "If-None-Match")

			res = b.client.Patch("/webhook-endpoints/we_nothing", `{"description":"x"}`, apitest.Header("If-Match", value))
			assertNamesHeader(t, "PATCH /webhook-endpoints If-Match", res, "If-Match")

			key := newKey()
			res = b.client.Post("/refunds", refundOf(p.ID, 10), apitest.Header("Idempotency-Key", key), apitest.Header("If-Match", value))
			assertNamesHeader(t, "POST /refunds If-Match", res, "If-Match")
			if n := b.count(t, `SELECT count(*) FROM idempotency_keys WHERE key = $1`, key); n != 0 {
				t.Errorf("a refused refund stored its key")
			}
		})
	}
	assertPayment(t, b.client, p.ID, tag, nil)
	if n := b.count(t, `SELECT count(*) FROM refunds`); n != 0 {
		t.Errorf("%d refunds made under malformed If-Match", n)
	}
}

// TestAPreconditionAnOperationDoesNotTakeIsRefused: an operation whose resource has no ETag
// has nothing to evaluate If-Match or If-None-Match against, and PATCH evaluates only
// If-Match. Ignored, the condition would not stop the method: DELETE /account sent "only if"
// a tag matched deleted the account. Each is a 400 naming the header, well-formed or not, and
// the method is not performed.
func TestAPreconditionAnOperationDoesNotTakeIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doomed, _ := throwaway(t, b.client)
	p, _ := createPayment(t, b.client, 500)
	refund := b.client.Post("/refunds", refundOf(p.ID, 10), apitest.Header("Idempotency-Key", newKey()))
	var r struct{ ID string }
	refund.Decode(t, &r)
	for _, tt := range []struct {
		header, value string
	}{
		{"If-Match", `"v1"`}, {"If-Match", "*"}, {"If-Match", "garbage"},
		{"If-None-Match", `"v1"`}, {"If-None-Match", "*"},
	} {
		res := doomed.Do(http.MethodDelete, "/account", nil, apitest.Header(tt.header, tt.value))
		assertNamesHeader(t, "DELETE /account "+tt.header+": "+tt.value, res, tt.header)
		res = b.client.Get("/refunds/"+r.ID, apitest.Header(tt.header, tt.value))
		assertNamesHeader(t, "GET /refunds/{id} "+tt.header+": "+tt.value, res, tt.header)
	}
	etag := b.client.Get("/payments/" + p.ID).Header.Get("ETag")
	res := patchPayment(b.client, p.ID, etag, `{"description":"changed"}`, apitest.Header("If-None-Match", etag))
	assertNamesHeader(t, "PATCH with If-None-Match", res, "If-None-Match")
	assertPayment(t, b.client, p.ID, etag, nil)
	if res := doomed.Get("/account"); res.Status != http.StatusOK {
		t.Errorf("the account after conditional deletes: %d %s, want it still there", res.Status, res.Body)
	}
	if res := doomed.Do(http.MethodDelete, "/account", nil); res.Status != http.StatusNoContent {
		t.Errorf("DELETE /account without a precondition: %d %s", res.Status, res.Body)
	}
}

func assertNamesHeader(t *testing.T, what string, res *apitest.Response, header string) {
	t.Helper()
	prob := res.Problem(t)
	if res.Status != http.StatusBadRequest || prob.Type != "/problems/invalid-request" || !slices.Contains(fieldsOf(prob), header) {
		t.Errorf("%s: %d %s, want 400 naming %s", what, res.Status, res.Body, header)
	}
}

// TestEntityTagsCompareByteForByte: RFC 9110 compares opaque tags as strings. "v01" and
// "v+1" name version 1 as numbers do, but they are not the tag "v1" the server issued.
func TestEntityTagsCompareByteForByte(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p, tag := createPayment(t, b.client, 1300)
	if tag != `"v1"` {
		t.Fatalf("a new payment's ETag is %s, want \"v1\"", tag)
	}
	lookalikes := []string{`"v01"`, `"v+1"`, `"v1.0"`, `"V1"`, `"v001", "v1x"`}

	for _, value := range lookalikes {
		t.Run(value, func(t *testing.T) {
			res := patchPayment(b.client, p.ID, value, `{"description":"lookalike"}`)
			if res.Status != http.StatusPreconditionFailed || res.Problem(t).Raw["current_etag"] != tag {
				t.Errorf("PATCH If-Match %s: %d %s, want 412", value, res.Status, res.Body)
			}
			res = b.client.Post("/refunds", refundOf(p.ID, 10), apitest.Header("Idempotency-Key", newKey()), apitest.Header("If-Match", value))
			if res.Status != http.StatusPreconditionFailed {
				t.Errorf("POST /refunds If-Match %s: %d %s, want 412", value, res.Status, res.Body)
			}
			res = b.client.Get("/payments/"+p.ID, apitest.Header("If-None-Match", value))
			if res.Status != http.StatusOK {
				t.Errorf("GET If-None-Match %s: %d, want 200", value, res.Status)
			}
		})
	}
	assertPayment(t, b.client, p.ID, tag, nil)
	if got := patchPayment(b.client, p.ID, `"v1"`, `{"description":"exact"}`); got.Status != http.StatusOK {
		t.Errorf("the exact tag: %d %s", got.Status, got.Body)
	}
}

// TestNoOpPatchKeepsTheVersion: a PATCH that changes nothing must not make every other
// client's ETag stale, bump updated_at, or record a payment.updated event.
func TestNoOpPatchKeepsTheVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.client.Post("/payments", `{"amount":900,"currency":"usd","payment_method":"pm_card_visa","description":"same","metadata":{"a":"1"}}`,
		apitest.Header("Idempotency-Key", newKey()))
	var created struct {
		ID        string `json:"id"`
		UpdatedAt string `json:"updated_at"`
	}
	res.Decode(t, &created)
	tag := res.Header.Get("ETag")
	events := func() int {
		return b.count(t, `SELECT count(*) FROM events WHERE data->>'id' = $1`, created.ID)
	}
	eventsBefore := events()

	noOps := []struct{ name, ifMatch, body string }{
		{"an empty patch", tag, `{}`},
		{"the same description", tag, `{"description":"same"}`},
		{"the same metadata value", tag, `{"metadata":{"a":"1"}}`},
		{"removing a key that is not there", tag, `{"metadata":{"missing":null}}`},
		{"all of it at once, under *", "*", `{"description":"same","metadata":{"a":"1","missing":null}}`},
	}
	for _, tt := range noOps {
		t.Run(tt.name, func(t *testing.T) {
			res := patchPayment(b.client, created.ID, tt.ifMatch, tt.body)
			var got struct {
				UpdatedAt string `json:"updated_at"`
			}
			res.Decode(t, &got)
			if res.Status != http.StatusOK || res.Header.Get("ETag") != tag || got.UpdatedAt != created.UpdatedAt {
				t.Errorf("%d ETag %s updated_at %s, want 200 with %s and %s", res.Status, res.Header.Get("ETag"), got.UpdatedAt, tag, created.UpdatedAt)
			}
		})
	}
	if n := events(); n != eventsBefore {
		t.Errorf("no-op patches recorded %d events", n-eventsBefore)
	}
	assertPayment(t, b.client, created.ID, tag, ptr("same"))

	t.Run("a no-op still checks its precondition", func(t *testing.T) {
		res := patchPayment(b.client, created.ID, `"v7"`, `{}`)
		if res.Status != http.StatusPreconditionFailed || res.Problem(t).Raw["current_etag"] != tag {
			t.Errorf("stale no-op: %d %s, want 412", res.Status, res.Body)
		}
		if res := patchPayment(b.client, "pay_doesnotexist", "*", `{}`); res.Status != http.StatusNotFound {
			t.Errorf("no-op on a missing payment: %d, want 404", res.Status)
		}
	})
	t.Run("a real change after no-ops is version 2", func(t *testing.T) {
		res := patchPayment(b.client, created.ID, tag, `{"description":"different"}`)
		if res.Status != http.StatusOK || res.Header.Get("ETag") != `"v2"` || events() != eventsBefore+1 {
			t.Errorf("%d ETag %s, %d new events; want 200, \"v2\", 1", res.Status, res.Header.Get("ETag"), events()-eventsBefore)
		}
	})
}

// TestEntityTagListsOnSeveralLinesAreOneList: a client may send If-Match or If-None-Match as
// several field lines, each a part of one list (RFC 9110, section 5.3): the current tag on
// the second line still matches, where refusing a header sent twice would answer 400.
func TestEntityTagListsOnSeveralLinesAreOneList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p, tag := createPayment(t, b.client, 1400)
	lines := func(name string, values ...string) apitest.Option {
		return func(r *http.Request) {
			for _, v := range values {
				r.Header.Add(name, v)
			}
		}
	}
	if res := b.client.Get("/payments/"+p.ID, lines("If-None-Match", `"v7"`, tag)); res.Status != http.StatusNotModified {
		t.Errorf("GET with the current tag on the second If-None-Match line: %d %s, want 304", res.Status, res.Body)
	}
	res := b.client.Do(http.MethodPatch, "/payments/"+p.ID, map[string]any{"description": "two lines"},
		lines("If-Match", `"v7"`, tag), apitest.Header("Content-Type", "application/merge-patch+json"))
	if res.Status != http.StatusOK {
		t.Errorf("PATCH with the current tag on the second If-Match line: %d %s, want 200", res.Status, res.Body)
	}
}

// TestAReadEvaluatesIfMatch: an If-Match sent with a GET or a HEAD is evaluated before the
// read (RFC 9110 section 13.1.1), on each resource with an ETag: 412 with the current tag
// when it names none of them (a weak tag never matches), the resource when it names it or
// is *, and If-None-Match only after it (section 13.2.2).
func TestAReadEvaluatesIfMatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startWorkers(t, b.pool, 1000)
	p, paymentTag := createPayment(t, b.client, 1200)
	e, endpointTag := createEndpoint(t, b.client, publicURL, "*")
	done := waitForJob(t, b.client, requestReport(t, b.client, reportBody("payments", "csv")).ID, "succeeded")
	reportTag := `"` + done.Result.ReportID + `"`

	for _, r := range []struct{ path, tag, other string }{
		{"/payments/" + p.ID, paymentTag, `"v9"`},
		{"/webhook-endpoints/" + e.ID, endpointTag, `"v9"`},
		{done.Result.DownloadURL, reportTag, `"rpt_other"`},
	} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			for _, c := range []struct {
				ifMatch, ifNoneMatch string
				status               int
			}{
				{r.other, "", http.StatusPreconditionFailed},
				{"W/" + r.tag, "", http.StatusPreconditionFailed}, // strong comparison
				{r.other + ", " + r.tag, "", http.StatusOK},
				{"*", "", http.StatusOK},
				{r.other, r.tag, http.StatusPreconditionFailed}, // If-Match first
				{r.tag, r.tag, http.StatusNotModified},
				{r.tag, r.other, http.StatusOK},
			} {
				opts := []apitest.Option{apitest.Header("If-Match", c.ifMatch)}
				if c.ifNoneMatch != "" {
					opts = append(opts, apitest.Header("If-None-Match", c.ifNoneMatch))
				}
				res := b.client.Do(method, r.path, nil, opts...)
				if res.Status != c.status {
					t.Errorf("%s %s, If-Match %s, If-None-Match %q: %d %s, want %d", method, r.path, c.ifMatch, c.ifNoneMatch, res.Status, res.Body, c.status)
					continue
				}
				if c.status == http.StatusPreconditionFailed && method == http.MethodGet {
					if got := res.Problem(t).Raw["current_etag"]; got != r.tag {
						t.Errorf("GET %s, If-Match %s: current_etag %v, want %s", r.path, c.ifMatch, got, r.tag)
					}
				}
			}
			res := b.client.Do(method, r.path, nil, apitest.Header("If-Match", "garbage"))
			if res.Status != http.StatusBadRequest {
				t.Errorf("%s %s with a malformed If-Match: %d, want 400", method, r.path, res.Status)
			}
		}
	}
}
