package handlers_test

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

func TestGetPaymentConditional(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p, created := createPayment(t, b.client, 1500)

	res := b.client.Get("/payments/" + p.ID)
	tag := res.Header.Get("ETag")
	if res.Status != http.StatusOK || tag != `"v1"` || tag != created {
		t.Fatalf("GET: %d ETag %q (create gave %q), want 200 with \"v1\"", res.Status, tag, created)
	}

	tests := []struct {
		name        string
		ifNoneMatch string
		want        int
	}{
		{"the same tag", tag, http.StatusNotModified},
		{"its weak form (weak comparison)", "W/" + tag, http.StatusNotModified},
		{"a list holding it", `"x", ` + tag, http.StatusNotModified},
		{"any tag", "*", http.StatusNotModified},
		{"another tag", `"v2"`, http.StatusOK},
		{"another tag, weak", `W/"v2"`, http.StatusOK},
		{"a tag this server never issues", `"abc"`, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Get("/payments/"+p.ID, apitest.Header("If-None-Match", tt.ifNoneMatch))
			if res.Status != tt.want {
				t.Fatalf("If-None-Match %s: %d %s, want %d", tt.ifNoneMatch, res.Status, res.Body, tt.want)
			}
			if got := res.Header.Get("ETag"); got != tag {
				t.Errorf("ETag %q, want %q", got, tag)
			}
			if tt.want == http.StatusNotModified && len(res.Body) != 0 {
				t.Errorf("304 with a body: %q", res.Body)
			}
			if tt.want == http.StatusOK {
				var got payment
				res.Decode(t, &got)
				if got.ID != p.ID {
					t.Errorf("body is payment %q, want %q", got.ID, p.ID)
				}
			}
		})
	}

	t.Run("an update makes the old tag stale", func(t *testing.T) {
		upd := patchPayment(b.client, p.ID, tag, `{"description":"changed"}`)
		if upd.Status != http.StatusOK {
			t.Fatalf("PATCH: %d %s", upd.Status, upd.Body)
		}
		res := b.client.Get("/payments/"+p.ID, apitest.Header("If-None-Match", tag))
		if res.Status != http.StatusOK || res.Header.Get("ETag") != `"v2"` {
			t.Errorf("old tag after an update: %d ETag %q, want 200 with \"v2\"", res.Status, res.Header.Get("ETag"))
		}
	})
}

func TestUpdatePaymentPreconditions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p, v1 := createPayment(t, b.client, 2000)

	t.Run("no If-Match is 428 and changes nothing", func(t *testing.T) {
		res := patchPayment(b.client, p.ID, "", `{"description":"no precondition"}`)
		if res.Status != http.StatusPreconditionRequired || res.Problem(t).Type != "/problems/precondition-required" {
			t.Errorf("%d %s", res.Status, res.Body)
		}
		assertPayment(t, b.client, p.ID, v1, nil)
	})
	t.Run("a weak tag never matches (strong comparison)", func(t *testing.T) {
		res := patchPayment(b.client, p.ID, "W/"+v1, `{"description":"weak"}`)
		if res.Status != http.StatusPreconditionFailed || res.Problem(t).Raw["current_etag"] != v1 {
			t.Errorf("%d %s, want 412 with current_etag %s", res.Status, res.Body, v1)
		}
		assertPayment(t, b.client, p.ID, v1, nil)
	})

	var v2 string
	t.Run("the current tag applies the change and issues a new tag", func(t *testing.T) {
		res := patchPayment(b.client, p.ID, v1, `{"description":"second"}`)
		var got payment
		res.Decode(t, &got)
		v2 = res.Header.Get("ETag")
		if res.Status != http.StatusOK || v2 == "" || v2 == v1 {
			t.Fatalf("%d ETag %q (was %q)", res.Status, v2, v1)
		}
		if got.Description == nil || *got.Description != "second" {
			t.Errorf("response description %v", got.Description)
		}
		assertPayment(t, b.client, p.ID, v2, ptr("second"))
	})
	t.Run("a stale tag is 412 naming the current one, and changes nothing", func(t *testing.T) {
		res := patchPayment(b.client, p.ID, v1, `{"description":"lost update"}`)
		prob := res.Problem(t)
		if res.Status != http.StatusPreconditionFailed || prob.Type != "/problems/precondition-failed" {
			t.Fatalf("%d %s", res.Status, res.Body)
		}
		current := b.client.Get("/payments/" + p.ID).Header.Get("ETag")
		if prob.Raw["current_etag"] != current || current != v2 {
			t.Errorf("current_etag %v, GET ETag %q, want both %q", prob.Raw["current_etag"], current, v2)
		}
		assertPayment(t, b.client, p.ID, v2, ptr("second"))
	})

	tests := []struct {
		name    string
		ifMatch func(current string) string
	}{
		{"If-Match: * matches any version", func(string) string { return "*" }},
		{"a list holding the current tag", func(current string) string { return `"x", W/` + current + `, ` + current }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := b.client.Get("/payments/" + p.ID).Header.Get("ETag")
			desc := fmt.Sprintf("change %d", i)
			res := patchPayment(b.client, p.ID, tt.ifMatch(current), map[string]any{"description": desc})
			next := res.Header.Get("ETag")
			if res.Status != http.StatusOK || next == current {
				t.Fatalf("%d ETag %q (was %q) %s", res.Status, next, current, res.Body)
			}
			assertPayment(t, b.client, p.ID, next, &desc)
		})
	}

	t.Run("an unknown payment is 404", func(t *testing.T) {
		for _, tag := range []string{"*", v1} {
			res := patchPayment(b.client, "pay_doesnotexist", tag, `{"description":"x"}`)
			if res.Status != http.StatusNotFound || res.Problem(t).Type != "/problems/not-found" {
				t.Errorf("If-Match %s: %d %s", tag, res.Status, res.Body)
			}
		}
	})
}

func TestUpdatePaymentMergePatch(t *testing.T) {
	t.Parallel()
	b := setup(t)

	for _, contentType := range []string{"application/merge-patch+json", "application/json"} {
		t.Run(contentType, func(t *testing.T) {
			res := b.client.Post("/payments", `{"amount":900,"currency":"usd","payment_method":"pm_card_visa","description":"first","metadata":{"a":"1"}}`,
				apitest.Header("Idempotency-Key", newKey()))
			if res.Status != http.StatusCreated {
				t.Fatalf("create: %d %s", res.Status, res.Body)
			}
			var p payment
			res.Decode(t, &p)
			tag := res.Header.Get("ETag")

			steps := []struct {
				patch           string
				wantDescription *string
				wantMetadata    map[string]string
			}{
				{`{"description":"second"}`, ptr("second"), map[string]string{"a": "1"}},
				{`{"metadata":{"b":"2"}}`, ptr("second"), map[string]string{"a": "1", "b": "2"}},
				{`{"metadata":{"a":null}}`, ptr("second"), map[string]string{"b": "2"}},
				{`{"description":null}`, nil, map[string]string{"b": "2"}},
				{`{"metadata":{"c":"3"},"description":"third"}`, ptr("third"), map[string]string{"b": "2", "c": "3"}},
				{`{"metadata":null}`, ptr("third"), map[string]string{}},
			}
			for i, step := range steps {
				res := patchPayment(b.client, p.ID, tag, step.patch, apitest.Header("Content-Type", contentType))
				if res.Status != http.StatusOK {
					t.Fatalf("PATCH %s: %d %s", step.patch, res.Status, res.Body)
				}
				tag = res.Header.Get("ETag")
				var got payment
				res.Decode(t, &got)
				if !equalPtr(got.Description, step.wantDescription) || !maps.Equal(got.Metadata, step.wantMetadata) {
					t.Errorf("PATCH %s: description %v metadata %v, want %v %v",
						step.patch, deref(got.Description), got.Metadata, deref(step.wantDescription), step.wantMetadata)
				}
				// A cleared description is a JSON null, not an absent member.
				var raw map[string]any
				res.Decode(t, &raw)
				if d, ok := raw["description"]; !ok || (step.wantDescription == nil && d != nil) {
					t.Errorf("PATCH %s: description member %v (present %v)", step.patch, d, ok)
				}
				events := b.count(t, `SELECT count(*) FROM events WHERE type = 'payment.updated' AND data->>'id' = $1`, p.ID)
				if events != i+1 {
					t.Errorf("after PATCH %d: %d payment.updated events, want %d", i+1, events, i+1)
				}
			}
			// The last event carries the payment as it now is.
			var lastMetadata string
			if err := b.pool.QueryRow(t.Context(), `SELECT data->>'metadata' FROM events
				WHERE type = 'payment.updated' AND data->>'id' = $1 ORDER BY created_at DESC LIMIT 1`, p.ID).Scan(&lastMetadata); err != nil {
				t.Fatal(err)
			}
			if lastMetadata != "{}" {
				t.Errorf("last payment.updated event metadata %s, want {}", lastMetadata)
			}

			res = patchPayment(b.client, p.ID, tag, `{"foo":"bar"}`, apitest.Header("Content-Type", contentType))
			if prob := res.Problem(t); res.Status != http.StatusBadRequest || !slices.Contains(fieldsOf(prob), "/foo") {
				t.Errorf("unknown member: %d %s, want 400 naming /foo", res.Status, res.Body)
			}
			assertPayment(t, b.client, p.ID, tag, ptr("third"))
			if events := b.count(t, `SELECT count(*) FROM events WHERE type = 'payment.updated' AND data->>'id' = $1`, p.ID); events != len(steps) {
				t.Errorf("a rejected PATCH wrote an event: %d, want %d", events, len(steps))
			}
		})
	}
}

// TestUpdatePaymentMediaTypeCase: media types are case-insensitive (RFC 9110, 8.3.1), so a
// patch sent as Application/Merge-Patch+JSON must be applied like any other.
func TestUpdatePaymentMediaTypeCase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, contentType := range []string{"Application/Merge-Patch+JSON", "APPLICATION/JSON"} {
		t.Run(contentType, func(t *testing.T) {
			p, tag := createPayment(t, b.client, 100)
			res := patchPayment(b.client, p.ID, tag, `{"description":"changed"}`, apitest.Header("Content-Type", contentType))
			if res.Status != http.StatusOK {
				t.Fatalf("%d %s", res.Status, res.Body)
			}
			var got payment
			res.Decode(t, &got)
			if !equalPtr(got.Description, ptr("changed")) {
				t.Errorf("answered 200 with ETag %s but description %v: the patch was dropped",
					res.Header.Get("ETag"), deref(got.Description))
			}
		})
	}
}

// TestConcurrentUpdatesWithOneETag: ten writers who all read v1 are inside their
// transactions at once, queued behind the test's lock on the payment's row; the conditional
// UPDATE lets exactly one win and tells the others which version beat them. (Checking the
// version in Go before an unconditional write would let all ten win.)
func TestConcurrentUpdatesWithOneETag(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p, v1 := createPayment(t, b.client, 3000)
	const n = 10

	responses := b.fireBehindPaymentLock(t, p.ID, n, func(i int) *apitest.Response {
		return patchPayment(b.client, p.ID, v1, map[string]any{"description": fmt.Sprintf("writer %d", i)})
	})

	var winner string
	var ok, stale int
	for i, res := range responses {
		switch res.Status {
		case http.StatusOK:
			ok++
			winner = fmt.Sprintf("writer %d", i)
			if res.Header.Get("ETag") != `"v2"` {
				t.Errorf("winner's ETag %q, want \"v2\"", res.Header.Get("ETag"))
			}
		case http.StatusPreconditionFailed:
			stale++
			if got := res.Problem(t).Raw["current_etag"]; got != `"v2"` {
				t.Errorf("loser's current_etag %v, want \"v2\"", got)
			}
		default:
			t.Errorf("unexpected %d %s", res.Status, res.Body)
		}
	}
	if ok != 1 || stale != n-1 {
		t.Fatalf("%d succeeded and %d got 412, want 1 and %d", ok, stale, n-1)
	}
	assertPayment(t, b.client, p.ID, `"v2"`, &winner)
	if got := b.count(t, `SELECT count(*) FROM events WHERE type = 'payment.updated'`); got != 1 {
		t.Errorf("%d payment.updated events, want 1", got)
	}
}

func TestMetadataLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	longKey := strings.Repeat("k", 41)

	tests := []struct {
		name     string
		metadata map[string]string
		field    string // the error is at this pointer or inside it
	}{
		{"51 keys", manyKeys("k", 51), "/metadata"},
		{"a key of 41 characters", map[string]string{longKey: "v"}, "/metadata/" + longKey},
		{"a value of 501 characters", map[string]string{"note": strings.Repeat("v", 501)}, "/metadata/note"},
	}
	// check asserts a 400 that names the field of tt.
	check := func(t *testing.T, res *apitest.Response, field string) {
		t.Helper()
		prob := res.Problem(t)
		if res.Status != http.StatusBadRequest || prob.Type != "/problems/invalid-request" {
			t.Fatalf("%d %s, want 400 invalid-request", res.Status, res.Body)
		}
		if !slices.ContainsFunc(fieldsOf(prob), func(f string) bool { return f == field || strings.HasPrefix(f, field+"/") }) {
			t.Errorf("errors name %v, want %s", fieldsOf(prob), field)
		}
	}
	for _, tt := range tests {
		t.Run("create with "+tt.name, func(t *testing.T) {
			body := visa(100)
			body["metadata"] = tt.metadata
			check(t, b.client.Post("/payments", body, apitest.Header("Idempotency-Key", newKey())), tt.field)
		})
	}
	if got := b.count(t, `SELECT count(*) FROM payments`); got != 0 {
		t.Errorf("%d payments created by invalid requests", got)
	}

	p, tag := createPayment(t, b.client, 100)
	for _, tt := range tests {
		t.Run("update with "+tt.name, func(t *testing.T) {
			res := patchPayment(b.client, p.ID, tag, map[string]any{"metadata": tt.metadata})
			assertPayment(t, b.client, p.ID, tag, nil)
			check(t, res, tt.field)
		})
	}

	t.Run("a merge past 50 keys is refused and changes nothing", func(t *testing.T) {
		res := patchPayment(b.client, p.ID, tag, map[string]any{"metadata": map[string]string{"a": "1"}})
		if res.Status != http.StatusOK {
			t.Fatalf("seed one key: %d %s", res.Status, res.Body)
		}
		tag = res.Header.Get("ETag")
		before := b.client.Get("/payments/" + p.ID)

		res = patchPayment(b.client, p.ID, tag, map[string]any{"metadata": manyKeys("m", 50)}) // 1 + 50
		if prob := res.Problem(t); res.Status != http.StatusBadRequest || !slices.Contains(fieldsOf(prob), "/metadata") {
			t.Errorf("%d %s, want 400 naming /metadata", res.Status, res.Body)
		}
		after := b.client.Get("/payments/" + p.ID)
		if after.Header.Get("ETag") != tag || string(after.Body) != string(before.Body) {
			t.Errorf("the refused merge changed the payment: ETag %q (was %q)\n%s\n%s", after.Header.Get("ETag"), tag, after.Body, before.Body)
		}
		if got := b.count(t, `SELECT count(*) FROM events WHERE type = 'payment.updated'`); got != 1 {
			t.Errorf("%d payment.updated events, want 1: the refused merge must not write one", got)
		}

		res = patchPayment(b.client, p.ID, tag, map[string]any{"metadata": manyKeys("m", 49)}) // exactly 50
		var got payment
		res.Decode(t, &got)
		if res.Status != http.StatusOK || len(got.Metadata) != 50 {
			t.Errorf("a merge to exactly 50 keys: %d with %d keys", res.Status, len(got.Metadata))
		}
	})
}

func TestTenancy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mine, tag := createPayment(t, b.client, 4100)
	theirs, _ := createPayment(t, b.other, 4200)

	if res := b.other.Get("/payments/" + mine.ID); res.Status != http.StatusNotFound || res.Problem(t).Type != "/problems/not-found" {
		t.Errorf("GET another account's payment: %d %s", res.Status, res.Body)
	}
	for _, ifMatch := range []string{tag, "*"} {
		res := patchPayment(b.other, mine.ID, ifMatch, `{"description":"hijacked"}`)
		if res.Status != http.StatusNotFound || res.Problem(t).Type != "/problems/not-found" {
			t.Errorf("PATCH another account's payment with If-Match %s: %d %s", ifMatch, res.Status, res.Body)
		}
	}
	assertPayment(t, b.client, mine.ID, tag, nil)

	ids, _ := listPage(t, b.other, url.Values{"limit": {"100"}})
	if slices.Contains(ids, mine.ID) || !slices.Equal(ids, []string{theirs.ID}) {
		t.Errorf("the other account lists %v, want only its own %s", ids, theirs.ID)
	}
	for _, status := range []string{"succeeded", "failed"} {
		ids, _ := listPage(t, b.other, url.Values{"status": {status}})
		if slices.Contains(ids, mine.ID) {
			t.Errorf("status=%s lists another account's payment", status)
		}
	}
}

func TestListPayments(t *testing.T) {
	t.Parallel()

	t.Run("keyset pages are stable under inserts", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var created []string
		for i := range 7 {
			p, _ := createPayment(t, b.client, 100+i)
			created = append(created, p.ID)
		}
		newestFirst := slices.Clone(created)
		slices.Reverse(newestFirst)

		ids1, more1 := listPage(t, b.client, url.Values{"limit": {"3"}})
		for i := range 2 { // newer than every listed payment: an OFFSET page 2 would now repeat page 1
			createPayment(t, b.client, 900+i)
		}
		ids2, more2 := listPage(t, b.client, url.Values{"limit": {"3"}, "starting_after": {last(ids1)}})
		ids3, more3 := listPage(t, b.client, url.Values{"limit": {"3"}, "starting_after": {last(ids2)}})

		pages := []struct {
			ids, want []string
			more      bool
			wantMore  bool
		}{
			{ids1, newestFirst[0:3], more1, true},
			{ids2, newestFirst[3:6], more2, true},
			{ids3, newestFirst[6:7], more3, false},
		}
		for i, pg := range pages {
			if !slices.Equal(pg.ids, pg.want) || pg.more != pg.wantMore {
				t.Errorf("page %d: %v has_more=%v, want %v has_more=%v", i+1, pg.ids, pg.more, pg.want, pg.wantMore)
			}
		}
		all := slices.Concat(ids1, ids2, ids3)
		seen := map[string]bool{}
		for _, id := range all {
			if seen[id] {
				t.Errorf("%s listed twice", id)
			}
			seen[id] = true
		}
		if len(seen) != 7 || !slices.Equal(sorted(all), sorted(created)) {
			t.Errorf("the pages hold %v, want exactly %v", all, created)
		}

		// A first page fetched now starts with the two new payments.
		fresh, more := listPage(t, b.client, url.Values{"limit": {"3"}})
		if len(fresh) != 3 || fresh[2] != newestFirst[0] || !more {
			t.Errorf("new first page %v, want two new payments then %s", fresh, newestFirst[0])
		}
	})

	t.Run("newest first", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for i := range 5 {
			createPayment(t, b.client, 100+i)
		}
		page := listFull(t, b.client, url.Values{"limit": {"100"}})
		for i := 1; i < len(page.Data); i++ {
			prev, cur := page.Data[i-1].createdAt(t), page.Data[i].createdAt(t)
			if !prev.After(cur) {
				t.Errorf("item %d created %v, not after item %d created %v", i-1, prev, i, cur)
			}
		}
	})

	// A limit is an integer however it is written, as a body's amount is: 2.0 and 2e0 are 2.
	t.Run("a whole-number limit", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for i := range 3 {
			createPayment(t, b.client, 100+i)
		}
		for _, limit := range []string{"2", "2.0", "2e0", "0.2E1"} {
			if page := listFull(t, b.client, url.Values{"limit": {limit}}); len(page.Data) != 2 || !page.HasMore {
				t.Errorf("limit=%s: %d payments, has_more %v; want 2, true", limit, len(page.Data), page.HasMore)
			}
		}
	})

	t.Run("status filter", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ok1, _ := createPayment(t, b.client, 100)
		ok2, _ := createPayment(t, b.client, 200)
		res := b.client.Post("/payments", map[string]any{"amount": 300, "currency": "usd", "payment_method": processor.CardDeclined},
			apitest.Header("Idempotency-Key", newKey()))
		if res.Status != http.StatusPaymentRequired {
			t.Fatalf("declined card: %d %s", res.Status, res.Body)
		}
		declined := res.Problem(t).Raw["payment_id"].(string)

		if ids, _ := listPage(t, b.client, url.Values{"status": {"failed"}}); !slices.Equal(ids, []string{declined}) {
			t.Errorf("status=failed lists %v, want [%s]", ids, declined)
		}
		if ids, _ := listPage(t, b.client, url.Values{"status": {"succeeded"}}); !slices.Equal(ids, []string{ok2.ID, ok1.ID}) {
			t.Errorf("status=succeeded lists %v, want [%s %s]", ids, ok2.ID, ok1.ID)
		}
		if ids, _ := listPage(t, b.client, url.Values{"status": {"refunded"}}); len(ids) != 0 {
			t.Errorf("status=refunded lists %v, want none", ids)
		}
	})

	t.Run("created_gte and created_lt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for i := range 5 {
			createPayment(t, b.client, 100+i)
		}
		page := listFull(t, b.client, url.Values{"limit": {"100"}})
		slices.Reverse(page.Data) // oldest first: p[0] ... p[4]
		p := page.Data
		ids := func(items ...listedPayment) []string {
			out := make([]string, 0, len(items))
			for i := len(items) - 1; i >= 0; i-- { // as listed: newest first
				out = append(out, items[i].ID)
			}
			return out
		}
		tests := []struct {
			name  string
			query url.Values
			want  []string
		}{
			{"gte includes its bound", url.Values{"created_gte": {p[2].CreatedAt}}, ids(p[2], p[3], p[4])},
			{"lt excludes its bound", url.Values{"created_lt": {p[2].CreatedAt}}, ids(p[0], p[1])},
			{"a half-open window", url.Values{"created_gte": {p[1].CreatedAt}, "created_lt": {p[3].CreatedAt}}, ids(p[1], p[2])},
			{"an empty window", url.Values{"created_gte": {p[3].CreatedAt}, "created_lt": {p[3].CreatedAt}}, ids()},
			{"gte after the newest", url.Values{"created_gte": {p[4].createdAt(t).Add(time.Microsecond).Format(time.RFC3339Nano)}}, ids()},
			// RFC 3339 allows any precision, PostgreSQL keeps microseconds: a bound between
			// two still falls between the rows on either side of it.
			{"gte a nanosecond after a row", url.Values{"created_gte": {nanosAfter(t, p[2])}}, ids(p[3], p[4])},
			{"lt a nanosecond after a row", url.Values{"created_lt": {nanosAfter(t, p[2])}}, ids(p[0], p[1], p[2])},
			// The page ends at the cursor or at created_lt, whichever comes first.
			{"a cursor before lt", url.Values{"created_lt": {p[4].CreatedAt}, "starting_after": {p[2].ID}}, ids(p[0], p[1])},
			{"lt before the cursor", url.Values{"created_lt": {p[2].CreatedAt}, "starting_after": {p[4].ID}}, ids(p[0], p[1])},
			{"a status, a window and a cursor", url.Values{
				"status": {"succeeded"}, "created_gte": {p[1].CreatedAt}, "created_lt": {p[4].CreatedAt}, "starting_after": {p[3].ID},
			}, ids(p[1], p[2])},
			{"a status, lt before the cursor", url.Values{"status": {"succeeded"}, "created_lt": {p[1].CreatedAt}, "starting_after": {p[3].ID}}, ids(p[0])},
		}
		for _, tt := range tests {
			tt.query.Set("limit", "100")
			if got, _ := listPage(t, b.client, tt.query); !slices.Equal(got, tt.want) {
				t.Errorf("%s (%s): %v, want %v", tt.name, tt.query.Encode(), got, tt.want)
			}
		}
	})

	t.Run("invalid parameters are 400 naming them", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createPayment(t, b.client, 100)
		theirs, _ := createPayment(t, b.other, 100)
		tests := []struct {
			name  string
			query url.Values
			field string
		}{
			{"unknown starting_after", url.Values{"starting_after": {"pay_unknown"}}, "starting_after"},
			{"another account's payment as starting_after", url.Values{"starting_after": {theirs.ID}}, "starting_after"},
			{"limit 0", url.Values{"limit": {"0"}}, "limit"},
			{"limit 101", url.Values{"limit": {"101"}}, "limit"},
			{"limit not a number", url.Values{"limit": {"ten"}}, "limit"},
			{"unknown status", url.Values{"status": {"pending"}}, "status"},
			{"created_gte not a date-time", url.Values{"created_gte": {"yesterday"}}, "created_gte"},
			// RFC 3339 allows a leap second and a lower-case t; Go's parser, and so the server,
			// reads neither, and says so as for any other bad value.
			{"created_gte a leap second", url.Values{"created_gte": {"2016-12-31T23:59:60Z"}}, "created_gte"},
			{"created_lt with a lower-case t", url.Values{"created_lt": {"2026-01-01t00:00:00Z"}}, "created_lt"},
			{"created_lt with a lower-case z", url.Values{"created_lt": {"2026-01-01T00:00:00z"}}, "created_lt"},
			// Go's parser drops the digits past the ninth, which would move the bound back
			// onto the microsecond before it and select a row the bound excludes.
			{"created_gte finer than a nanosecond", url.Values{"created_gte": {"2026-01-01T00:00:00.0000010001Z"}}, "created_gte"},
			// Go's parser takes these offsets too; RFC 3339's hours end at 23, its minutes at 59.
			{"created_gte 24 hours ahead", url.Values{"created_gte": {"2026-01-01T00:00:00+24:00"}}, "created_gte"},
			{"created_lt 60 minutes behind", url.Values{"created_lt": {"2026-01-01T00:00:00-00:60"}}, "created_lt"},
		}
		for _, tt := range tests {
			res := b.client.Get("/payments?" + tt.query.Encode())
			if prob := res.Problem(t); res.Status != http.StatusBadRequest || prob.Type != "/problems/invalid-request" || !slices.Contains(fieldsOf(prob), tt.field) {
				t.Errorf("%s: %d %s, want 400 naming %s", tt.name, res.Status, res.Body, tt.field)
			}
		}
	})
}

// patchPayment sends a PATCH with If-Match, or without it when ifMatch is empty.
func patchPayment(c *apitest.Client, id, ifMatch string, body any, opts ...apitest.Option) *apitest.Response {
	if ifMatch != "" {
		opts = append(opts, apitest.Header("If-Match", ifMatch))
	}
	return c.Patch("/payments/"+id, body, opts...)
}

// assertPayment checks a payment's current ETag and, when description is not nil, its
// description: how a test shows that a refused request changed nothing.
func assertPayment(t *testing.T, c *apitest.Client, id, wantETag string, description *string) {
	t.Helper()
	res := c.Get("/payments/" + id)
	if got := res.Header.Get("ETag"); res.Status != http.StatusOK || got != wantETag {
		t.Errorf("payment %s: %d ETag %q, want %q", id, res.Status, got, wantETag)
	}
	if description != nil {
		var p payment
		res.Decode(t, &p)
		if !equalPtr(p.Description, description) {
			t.Errorf("payment %s: description %q, want %q", id, deref(p.Description), *description)
		}
	}
}

// listedPayment is the part of a listed payment the list tests read.
type listedPayment struct {
	ID        string `json:"id"`
	CreatedAt string `json:"created_at"` // kept as sent, to pass back in created_gte / created_lt
}

func (p listedPayment) createdAt(t *testing.T) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, p.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// nanosAfter is the payment's created_at plus a nanosecond, finer than the database holds.
func nanosAfter(t *testing.T, p listedPayment) string {
	t.Helper()
	return p.createdAt(t).Add(time.Nanosecond).Format(time.RFC3339Nano)
}

type paymentPage struct {
	Data    []listedPayment `json:"data"`
	HasMore bool            `json:"has_more"`
}

func listFull(t *testing.T, c *apitest.Client, query url.Values) paymentPage {
	t.Helper()
	res := c.Get("/payments?" + query.Encode())
	if res.Status != http.StatusOK {
		t.Fatalf("GET /payments?%s: %d %s", query.Encode(), res.Status, res.Body)
	}
	var page paymentPage
	res.Decode(t, &page)
	return page
}

// listPage returns the ids of one page, in order, and has_more.
func listPage(t *testing.T, c *apitest.Client, query url.Values) ([]string, bool) {
	t.Helper()
	page := listFull(t, c, query)
	ids := make([]string, 0, len(page.Data))
	for _, p := range page.Data {
		ids = append(ids, p.ID)
	}
	return ids, page.HasMore
}

// fieldsOf lists the fields an invalid-request problem names.
func fieldsOf(p apitest.Problem) []string {
	fields := make([]string, 0, len(p.Errors))
	for _, e := range p.Errors {
		f, _ := e["field"].(string)
		fields = append(fields, f)
	}
	return fields
}

// manyKeys is metadata with n keys named prefix0, prefix1, ...
func manyKeys(prefix string, n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprintf("%s%d", prefix, i)] = "v"
	}
	return m
}

func ptr(s string) *string { return &s }

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func equalPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func last(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[len(ids)-1]
}

func sorted(ids []string) []string {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
}
