package handlers_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// endpoint is the part of a webhook endpoint body the tests read.
type endpoint struct {
	ID                      string   `json:"id"`
	URL                     string   `json:"url"`
	Description             *string  `json:"description"`
	EnabledEvents           []string `json:"enabled_events"`
	Disabled                bool     `json:"disabled"`
	DisabledReason          *string  `json:"disabled_reason"`
	PreviousSecretExpiresAt *string  `json:"previous_secret_expires_at"`
	Secret                  *string  `json:"secret"`
}

// delivery is the part of a webhook delivery body the tests read.
type delivery struct {
	ID           string `json:"id"`
	EndpointID   string `json:"endpoint_id"`
	EventID      string `json:"event_id"`
	EventType    string `json:"event_type"`
	Status       string `json:"status"`
	AttemptCount int    `json:"attempt_count"`
	Attempts     []struct {
		Attempt        int     `json:"attempt"`
		ResponseStatus *int    `json:"response_status"`
		Error          *string `json:"error"`
	} `json:"attempts"`
}

// publicURL is an https URL on a public address: accepted at registration without DNS.
const publicURL = "https://93.184.215.14/hooks"

// createEndpoint registers an endpoint and returns it (with its secret) and its ETag.
func createEndpoint(t *testing.T, c *apitest.Client, url string, events ...string) (endpoint, string) {
	t.Helper()
	res := c.Post("/webhook-endpoints", map[string]any{"url": url, "enabled_events": events})
	if res.Status != http.StatusCreated {
		t.Fatalf("create endpoint: %d %s", res.Status, res.Body)
	}
	var e endpoint
	res.Decode(t, &e)
	return e, res.Header.Get("ETag")
}

func deliveries(t *testing.T, c *apitest.Client, endpointID string) []delivery {
	t.Helper()
	res := c.Get("/webhook-endpoints/" + endpointID + "/deliveries?limit=100")
	if res.Status != http.StatusOK {
		t.Fatalf("list deliveries: %d %s", res.Status, res.Body)
	}
	var page struct{ Data []delivery }
	res.Decode(t, &page)
	return page.Data
}

func TestWebhookEndpointLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e, v1 := createEndpoint(t, b.client, publicURL, "payment.succeeded", "refund.succeeded")
	if e.Secret == nil || !strings.HasPrefix(*e.Secret, "whsec_") || v1 != `"v1"` || e.Disabled {
		t.Fatalf("created %+v with ETag %q", e, v1)
	}

	res := b.client.Get("/webhook-endpoints/" + e.ID)
	var got endpoint
	res.Decode(t, &got)
	if res.Status != http.StatusOK || got.Secret != nil || strings.Contains(string(res.Body), "whsec_") {
		t.Fatalf("GET shows the secret or failed: %d %s", res.Status, res.Body)
	}
	if res := b.other.Get("/webhook-endpoints/" + e.ID); res.Status != http.StatusNotFound {
		t.Fatalf("another account's GET: %d", res.Status)
	}

	patch := func(ifMatch, body string) *apitest.Response {
		opts := []apitest.Option{apitest.Header("Content-Type", "application/merge-patch+json")}
		if ifMatch != "" {
			opts = append(opts, apitest.Header("If-Match", ifMatch))
		}
		return b.client.Patch("/webhook-endpoints/"+e.ID, body, opts...)
	}
	if res := patch("", `{"disabled":true}`); res.Status != http.StatusPreconditionRequired {
		t.Fatalf("PATCH without If-Match: %d %s", res.Status, res.Body)
	}
	res = patch(v1, `{"disabled":true,"description":"paused","enabled_events":["*"]}`)
	res.Decode(t, &got)
	v2 := res.Header.Get("ETag")
	if res.Status != http.StatusOK || v2 != `"v2"` || !got.Disabled || *got.DisabledReason != "requested" ||
		*got.Description != "paused" || len(got.EnabledEvents) != 1 || got.EnabledEvents[0] != "*" {
		t.Fatalf("PATCH: %d %s", res.Status, res.Body)
	}
	if res := patch(v1, `{"disabled":false}`); res.Status != http.StatusPreconditionFailed || res.Problem(t).Raw["current_etag"] != v2 {
		t.Fatalf("stale PATCH: %d %s", res.Status, res.Body)
	}
	// A patch that changes nothing keeps the version, so other clients' tags stay fresh.
	res = patch(v2, `{"disabled":true,"description":"paused","enabled_events":["*"],"url":"`+publicURL+`"}`)
	if res.Status != http.StatusOK || res.Header.Get("ETag") != v2 {
		t.Fatalf("no-op PATCH: %d ETag %s, want 200 with %s", res.Status, res.Header.Get("ETag"), v2)
	}
	if res := patch(v1, `{}`); res.Status != http.StatusPreconditionFailed {
		t.Fatalf("stale no-op PATCH: %d %s", res.Status, res.Body)
	}
	res = patch(v2, `{"disabled":false,"description":null}`)
	res.Decode(t, &got)
	if res.Status != http.StatusOK || got.Disabled || got.DisabledReason != nil || got.Description != nil || res.Header.Get("ETag") != `"v3"` {
		t.Fatalf("re-enable: %d %s", res.Status, res.Body)
	}

	res = b.client.Post("/webhook-endpoints/"+e.ID+"/rotate-secret", nil)
	var rotated endpoint
	res.Decode(t, &rotated)
	if res.Status != http.StatusOK || rotated.Secret == nil || *rotated.Secret == *e.Secret || rotated.PreviousSecretExpiresAt == nil {
		t.Fatalf("rotate: %d %s", res.Status, res.Body)
	}

	if res := b.other.Do(http.MethodDelete, "/webhook-endpoints/"+e.ID, nil); res.Status != http.StatusNotFound {
		t.Fatalf("another account's DELETE: %d", res.Status)
	}
	if res := b.client.Do(http.MethodDelete, "/webhook-endpoints/"+e.ID, nil); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", res.Status, res.Body)
	}
	if res := b.client.Get("/webhook-endpoints/" + e.ID); res.Status != http.StatusNotFound {
		t.Fatalf("GET after DELETE: %d", res.Status)
	}
}

// TestWebhookEndpointReadsAndDeletesAreConditional: an endpoint's ETag works as a payment's.
// A current If-None-Match is a 304, on GET and HEAD. A DELETE under a stale If-Match is a 412
// naming the current tag, and the endpoint stays; under the current one, or without one, it
// goes.
func TestWebhookEndpointReadsAndDeletesAreConditional(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e, v1 := createEndpoint(t, b.client, publicURL, "*")
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		res := b.client.Do(method, "/webhook-endpoints/"+e.ID, nil, apitest.Header("If-None-Match", v1))
		if res.Status != http.StatusNotModified || res.Header.Get("ETag") != v1 || len(res.Body) != 0 {
			t.Fatalf("%s with the current tag: %d ETag %q %s, want 304", method, res.Status, res.Header.Get("ETag"), res.Body)
		}
	}
	res := b.client.Patch("/webhook-endpoints/"+e.ID, `{"description":"changed"}`, apitest.Header("If-Match", v1))
	v2 := res.Header.Get("ETag")
	if res.Status != http.StatusOK || v2 == v1 {
		t.Fatalf("PATCH: %d ETag %q %s", res.Status, v2, res.Body)
	}
	if res := b.client.Get("/webhook-endpoints/"+e.ID, apitest.Header("If-None-Match", v1)); res.Status != http.StatusOK {
		t.Fatalf("GET with the old tag: %d, want 200", res.Status)
	}

	del := func(id string, opts ...apitest.Option) *apitest.Response {
		return b.client.Do(http.MethodDelete, "/webhook-endpoints/"+id, nil, opts...)
	}
	if res := del(e.ID, apitest.Header("If-Match", v1)); res.Status != http.StatusPreconditionFailed || res.Problem(t).Raw["current_etag"] != v2 {
		t.Fatalf("DELETE under the old tag: %d %s, want 412 naming %s", res.Status, res.Body, v2)
	}
	if res := del(e.ID, apitest.Header("If-Match", "v2")); res.Status != http.StatusBadRequest {
		t.Fatalf("DELETE under a tag without quotes: %d %s, want 400", res.Status, res.Body)
	}
	if res := b.client.Get("/webhook-endpoints/" + e.ID); res.Status != http.StatusOK {
		t.Fatalf("GET after refused deletes: %d, want the endpoint still there", res.Status)
	}
	if res := del(e.ID, apitest.Header("If-Match", v2)); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE under the current tag: %d %s", res.Status, res.Body)
	}
	if res := del(e.ID, apitest.Header("If-Match", v2)); res.Status != http.StatusNotFound {
		t.Fatalf("DELETE of a deleted endpoint: %d %s, want 404", res.Status, res.Body)
	}
	other, _ := createEndpoint(t, b.client, publicURL, "*")
	if res := del(other.ID); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE without If-Match: %d %s", res.Status, res.Body)
	}
}

// TestRotateUnderIfMatch: a rotation sent an If-Match rotates only while the endpoint is at
// that ETag; a stale one is 412 and the secret stays, a malformed one 400. Without If-Match
// it rotates as before.
func TestRotateUnderIfMatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e, v1 := createEndpoint(t, b.client, publicURL, "*")
	rotate := func(opts ...apitest.Option) *apitest.Response {
		return b.client.Post("/webhook-endpoints/"+e.ID+"/rotate-secret", nil, opts...)
	}
	res := rotate(apitest.Header("If-Match", v1))
	v2 := res.Header.Get("ETag")
	if res.Status != http.StatusOK || v2 == v1 {
		t.Fatalf("rotation under the current tag: %d ETag %q %s", res.Status, v2, res.Body)
	}
	if res := rotate(apitest.Header("If-Match", v1)); res.Status != http.StatusPreconditionFailed || res.Problem(t).Raw["current_etag"] != v2 {
		t.Fatalf("rotation under the old tag: %d %s, want 412 naming %s", res.Status, res.Body, v2)
	}
	if res := rotate(apitest.Header("If-Match", "garbage")); res.Status != http.StatusBadRequest {
		t.Fatalf("rotation under a malformed tag: %d %s, want 400", res.Status, res.Body)
	}
	if got := b.client.Get("/webhook-endpoints/" + e.ID).Header.Get("ETag"); got != v2 {
		t.Fatalf("ETag %s after refused rotations, want %s", got, v2)
	}
	if res := rotate(); res.Status != http.StatusOK || res.Header.Get("ETag") == v2 {
		t.Fatalf("rotation without If-Match: %d ETag %q", res.Status, res.Header.Get("ETag"))
	}
}

// TestTwoRotationsUnderOneETag: two rotations sent with the same If-Match, both waiting on
// the endpoint's row (the test holds its lock), answer one 200 and one 412: the second must
// not retire the secret the first just issued, which a receiver may already have.
func TestTwoRotationsUnderOneETag(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e, v1 := createEndpoint(t, b.client, publicURL, "*")
	release := b.holdLocks(t, `SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR UPDATE`, e.ID)
	res := make([]*apitest.Response, 2)
	var wg sync.WaitGroup
	for i := range res {
		wg.Go(func() {
			res[i] = b.client.Post("/webhook-endpoints/"+e.ID+"/rotate-secret", nil, apitest.Header("If-Match", v1))
		})
	}
	b.waitUntilBlocked(t, 2)
	release()
	wg.Wait()
	got := []int{res[0].Status, res[1].Status}
	slices.Sort(got)
	if !slices.Equal(got, []int{http.StatusOK, http.StatusPreconditionFailed}) {
		t.Errorf("two rotations under %s: %v, want one 200 and one 412", v1, got)
	}
}

// TestReenablingAnEndpointForgetsItsFailures: an endpoint disabled after failing for days and
// enabled again starts a new streak; kept, the old one would disable it again at its next
// failure.
func TestReenablingAnEndpointForgetsItsFailures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e, _ := createEndpoint(t, b.client, publicURL, "*")
	if _, err := b.pool.Exec(t.Context(), `UPDATE webhook_endpoints SET failing_since = now() - interval '6 days',
		disabled_reason = 'failing', version = version + 1 WHERE id = $1`, e.ID); err != nil {
		t.Fatal(err)
	}
	tag := b.client.Get("/webhook-endpoints/" + e.ID).Header.Get("ETag")
	if res := b.client.Patch("/webhook-endpoints/"+e.ID, map[string]any{"disabled": false}, apitest.Header("If-Match", tag)); res.Status != http.StatusOK {
		t.Fatalf("enable: %d %s", res.Status, res.Body)
	}
	if n := b.count(t, `SELECT count(*) FROM webhook_endpoints WHERE id = $1 AND failing_since IS NULL AND disabled_reason IS NULL`, e.ID); n != 1 {
		t.Error("enabled again, the endpoint keeps its failure streak")
	}
}

func TestListWebhookEndpointsPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for range 3 {
		e, _ := createEndpoint(t, b.client, publicURL, "*")
		ids = append(ids, e.ID)
	}
	var page struct {
		Data    []endpoint
		HasMore bool `json:"has_more"`
	}
	b.client.Get("/webhook-endpoints?limit=2").Decode(t, &page)
	if len(page.Data) != 2 || !page.HasMore || page.Data[0].ID != ids[2] || page.Data[0].Secret != nil {
		t.Fatalf("first page %+v", page)
	}
	b.client.Get("/webhook-endpoints?limit=2&starting_after="+page.Data[1].ID).Decode(t, &page)
	if len(page.Data) != 1 || page.HasMore || page.Data[0].ID != ids[0] {
		t.Fatalf("second page %+v", page)
	}
}

func TestWebhookEndpointBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name  string
		body  any
		field string
	}{
		{"not a URL", map[string]any{"url": "not a url", "enabled_events": []string{"*"}}, "/url"},
		{"ftp", map[string]any{"url": "ftp://93.184.215.14/x", "enabled_events": []string{"*"}}, "/url"},
		{"plain http", map[string]any{"url": "http://93.184.215.14/x", "enabled_events": []string{"*"}}, "/url"},
		{"loopback", map[string]any{"url": "https://127.0.0.1/x", "enabled_events": []string{"*"}}, "/url"},
		{"metadata", map[string]any{"url": "https://169.254.169.254/latest", "enabled_events": []string{"*"}}, "/url"},
		{"a name resolving to loopback", map[string]any{"url": "https://localhost/x", "enabled_events": []string{"*"}}, "/url"},
		{"unknown event", map[string]any{"url": publicURL, "enabled_events": []string{"payment.exploded"}}, "/enabled_events/0"},
		{"no events", map[string]any{"url": publicURL, "enabled_events": []string{}}, "/enabled_events"},
		{"missing events", map[string]any{"url": publicURL}, "/enabled_events"}, // a missing member is named itself
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Post("/webhook-endpoints", tt.body)
			p := res.Problem(t)
			if res.Status != http.StatusBadRequest || p.Type != "/problems/invalid-request" || !hasFieldError(p, tt.field) {
				t.Fatalf("%d %s, want 400 naming %s", res.Status, res.Body, tt.field)
			}
		})
	}
	if n := b.count(t, `SELECT count(*) FROM webhook_endpoints`); n != 0 {
		t.Fatalf("%d endpoints stored from bad input", n)
	}

	e, v1 := createEndpoint(t, b.client, publicURL, "*")
	res := b.client.Patch("/webhook-endpoints/"+e.ID, map[string]any{"url": "https://10.0.0.1/x"}, apitest.Header("If-Match", v1))
	if res.Status != http.StatusBadRequest || !hasFieldError(res.Problem(t), "/url") {
		t.Fatalf("PATCH to a private URL: %d %s", res.Status, res.Body)
	}
}

// TestWebhookURLsWithPrivateNetworksAllowed: WEBHOOK_ALLOW_PRIVATE_NETWORKS opens loopback
// and private addresses, never link-local or cloud metadata ones, on create and on update.
func TestWebhookURLsWithPrivateNetworksAllowed(t *testing.T) {
	t.Parallel()
	b := setup(t, withPrivateReceivers())
	refused := []string{
		"https://169.254.169.254/latest/meta-data", "http://169.254.169.254/latest/meta-data",
		"http://169.254.10.1/", "http://[fe80::1]/", "http://[fd00:ec2::254]/latest/meta-data",
		"http://100.100.100.200/latest/meta-data", "http://168.63.129.16/machine",
	}
	for _, url := range refused {
		res := b.client.Post("/webhook-endpoints", map[string]any{"url": url, "enabled_events": []string{"*"}})
		if res.Status != http.StatusBadRequest || !hasFieldError(res.Problem(t), "/url") {
			t.Errorf("%s: %d %s, want 400 naming /url", url, res.Status, res.Body)
		}
	}
	for _, url := range []string{"http://127.0.0.1:3000/hooks", "http://localhost:3000/hooks", "http://10.1.2.3/hooks", "http://192.168.1.20/hooks", "http://[fd12::1]/hooks"} {
		createEndpoint(t, b.client, url, "*")
	}
	e, v1 := createEndpoint(t, b.client, "http://127.0.0.1:3000/hooks", "*")
	res := b.client.Patch("/webhook-endpoints/"+e.ID, map[string]any{"url": refused[0]}, apitest.Header("If-Match", v1))
	if res.Status != http.StatusBadRequest || !hasFieldError(res.Problem(t), "/url") {
		t.Fatalf("PATCH to the metadata service: %d %s", res.Status, res.Body)
	}
}

// TestWebhookURLsInDisguiseAreRefusedInEveryMode: a host some resolver reads as an address
// it does not look like, or one this machine answers for, is refused when registered, with
// private networks allowed or not, rather than failing at every attempt.
func TestWebhookURLsInDisguiseAreRefusedInEveryMode(t *testing.T) {
	t.Parallel()
	modes := map[string]*apitest.Client{"strict": setup(t).client, "private allowed": setup(t, withPrivateReceivers()).client}
	for mode, c := range modes {
		for _, host := range []string{"2130706433", "0x7f.1", "0177.0.0.1", "127.1", "localhost.", "app.localhost"} {
			t.Run(mode+"/"+host, func(t *testing.T) {
				url := "https://" + host + "/hooks" // https: refused for its host alone
				res := c.Post("/webhook-endpoints", map[string]any{"url": url, "enabled_events": []string{"*"}})
				if res.Status != http.StatusBadRequest || !hasFieldError(res.Problem(t), "/url") {
					t.Fatalf("%d %s, want 400 naming /url", res.Status, res.Body)
				}
			})
		}
	}
}

// hasFieldError reports whether the problem's errors member names field.
func hasFieldError(p apitest.Problem, field string) bool {
	for _, e := range p.Errors {
		if e["field"] == field {
			return true
		}
	}
	return false
}

// TestEventsFanOutToSubscribedEnabledEndpoints: a payment's event gets one pending delivery
// per enabled endpoint of the account subscribed to its type, and no other.
func TestEventsFanOutToSubscribedEnabledEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	all, _ := createEndpoint(t, b.client, publicURL, "*")
	named, _ := createEndpoint(t, b.client, publicURL, "payment.succeeded")
	refunds, _ := createEndpoint(t, b.client, publicURL, "refund.succeeded")
	off, offTag := createEndpoint(t, b.client, publicURL, "*")
	b.client.Patch("/webhook-endpoints/"+off.ID, map[string]any{"disabled": true}, apitest.Header("If-Match", offTag))
	foreign, _ := createEndpoint(t, b.other, publicURL, "*")

	p, _ := createPayment(t, b.client, 1200)

	var events struct {
		Data []struct {
			ID   string         `json:"id"`
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
	}
	b.client.Get("/events?type=payment.succeeded").Decode(t, &events)
	if len(events.Data) != 1 || events.Data[0].Data["id"] != p.ID {
		t.Fatalf("events %+v, want one payment.succeeded for %s", events, p.ID)
	}
	evt := events.Data[0].ID
	if res := b.client.Get("/events/" + evt); res.Status != http.StatusOK {
		t.Fatalf("GET event: %d", res.Status)
	}
	if res := b.other.Get("/events/" + evt); res.Status != http.StatusNotFound {
		t.Fatalf("another account's event: %d", res.Status)
	}

	for _, e := range []endpoint{all, named} {
		ds := deliveries(t, b.client, e.ID)
		if len(ds) != 1 || ds[0].EventID != evt || ds[0].Status != "pending" || ds[0].EventType != "payment.succeeded" || !strings.HasPrefix(ds[0].ID, "msg_") {
			t.Errorf("endpoint %s: deliveries %+v, want one pending for %s", e.ID, ds, evt)
		}
	}
	for _, e := range []endpoint{refunds, off} {
		if ds := deliveries(t, b.client, e.ID); len(ds) != 0 {
			t.Errorf("endpoint %s (unsubscribed or disabled) got %+v", e.ID, ds)
		}
	}
	if ds := deliveries(t, b.other, foreign.ID); len(ds) != 0 {
		t.Errorf("another account's endpoint got %+v", ds)
	}
}

// TestADeliveryShowsItsLatestAttempts: every redelivery adds attempts to the same delivery, so
// a delivery is listed with its latest 20 only, and attempt_count counts them all: a page of
// deliveries does not grow with redeliveries.
func TestADeliveryShowsItsLatestAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e, _ := createEndpoint(t, b.client, publicURL, "*")
	createPayment(t, b.client, 1200)
	const made = 25
	if _, err := b.pool.Exec(context.Background(), `
		WITH d AS (UPDATE webhook_deliveries SET attempt_count = $2 WHERE endpoint_id = $1 RETURNING account_id, id)
		INSERT INTO webhook_attempts (account_id, delivery_id, attempt, attempted_at, duration_ms, response_status)
		SELECT d.account_id, d.id, g, now(), 1, 500 FROM d, generate_series(1, $2) g`, e.ID, made); err != nil {
		t.Fatal(err)
	}
	ds := deliveries(t, b.client, e.ID)
	if len(ds) != 1 || ds[0].AttemptCount != made || len(ds[0].Attempts) != 20 {
		t.Fatalf("deliveries %+v, want one with attempt_count %d and 20 attempts", ds, made)
	}
	for i, a := range ds[0].Attempts {
		if a.Attempt != made-20+1+i {
			t.Fatalf("attempt %d is number %d, want the latest 20 oldest first", i, a.Attempt)
		}
	}
}

func TestRedeliverEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sub, _ := createEndpoint(t, b.client, publicURL, "payment.succeeded")
	unsub, unsubTag := createEndpoint(t, b.client, publicURL, "refund.succeeded")
	// Subscribed but disabled: a redelivery to every subscriber passes it by.
	off, offTag := createEndpoint(t, b.client, publicURL, "payment.succeeded")
	b.client.Patch("/webhook-endpoints/"+off.ID, map[string]any{"disabled": true}, apitest.Header("If-Match", offTag))
	createPayment(t, b.client, 700)
	first := deliveries(t, b.client, sub.ID)
	if len(first) != 1 {
		t.Fatalf("deliveries %+v", first)
	}
	evt := first[0].EventID

	var batch struct{ Data []delivery }
	res := b.client.Post("/events/"+evt+"/redeliver", nil)
	res.Decode(t, &batch)
	if res.Status != http.StatusAccepted || len(batch.Data) != 1 || batch.Data[0].ID != first[0].ID || batch.Data[0].Status != "pending" {
		t.Fatalf("redeliver to subscribers: %d %s, want the same delivery %s again", res.Status, res.Body, first[0].ID)
	}
	// Like every 202, it says where to watch the work and when: without an endpoint, the
	// event (its deliveries may go to several endpoints, each named in the body).
	assertWatchAt(t, b.client, res, "/events/"+evt)

	res = b.client.Post("/events/"+evt+"/redeliver", map[string]any{"endpoint_id": unsub.ID})
	res.Decode(t, &batch)
	if res.Status != http.StatusAccepted || len(batch.Data) != 1 || batch.Data[0].EndpointID != unsub.ID {
		t.Fatalf("redeliver to one endpoint: %d %s", res.Status, res.Body)
	}
	assertWatchAt(t, b.client, res, "/webhook-endpoints/"+unsub.ID+"/deliveries")
	if ds := deliveries(t, b.client, unsub.ID); len(ds) != 1 || ds[0].ID != batch.Data[0].ID {
		t.Errorf("the endpoint's deliveries %+v, want the one queued, %s", ds, batch.Data[0].ID)
	}
	// One endpoint's delivery is no cursor in another's list.
	if res := b.client.Get("/webhook-endpoints/" + sub.ID + "/deliveries?starting_after=" + batch.Data[0].ID); res.Status != http.StatusBadRequest {
		t.Errorf("another endpoint's delivery as the cursor: %d %s, want 400", res.Status, res.Body)
	}

	b.client.Patch("/webhook-endpoints/"+unsub.ID, map[string]any{"disabled": true}, apitest.Header("If-Match", unsubTag))
	res = b.client.Post("/events/"+evt+"/redeliver", map[string]any{"endpoint_id": unsub.ID})
	if p := res.Problem(t); res.Status != http.StatusConflict || p.Type != "/problems/webhook-endpoint-disabled" || p.Raw["endpoint_id"] != unsub.ID {
		t.Fatalf("redeliver to a disabled endpoint: %d %s", res.Status, res.Body)
	}
	res = b.client.Post("/events/"+evt+"/redeliver", map[string]any{"endpoint_id": "we_missing"})
	if res.Status != http.StatusBadRequest || !hasFieldError(res.Problem(t), "/endpoint_id") {
		t.Fatalf("redeliver to an unknown endpoint: %d %s", res.Status, res.Body)
	}
	if res := b.client.Post("/events/evt_missing/redeliver", nil); res.Status != http.StatusNotFound {
		t.Fatalf("redeliver an unknown event: %d %s", res.Status, res.Body)
	}
	if res := b.other.Post("/events/"+evt+"/redeliver", nil); res.Status != http.StatusNotFound {
		t.Fatalf("redeliver another account's event: %d %s", res.Status, res.Body)
	}
}

// assertWatchAt checks a 202's Location and Retry-After, and that Location answers.
func assertWatchAt(t *testing.T, c *apitest.Client, res *apitest.Response, location string) {
	t.Helper()
	if got := res.Header.Get("Location"); got != location || res.Header.Get("Retry-After") != "1" {
		t.Errorf("Location %q Retry-After %q, want %s after 1 second", got, res.Header.Get("Retry-After"), location)
	}
	if watched := c.Get(location); watched.Status != http.StatusOK {
		t.Errorf("GET %s: %d %s", location, watched.Status, watched.Body)
	}
}

// TestEventsAreListedNewestFirst protects EventList's order (created_at DESC, id DESC): the
// contract lists every collection newest first, and a client that reads the first page of
// GET /events for what just happened must find it there, not the account's oldest events.
func TestEventsAreListedNewestFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var want []string
	for i := range 3 {
		p, _ := createPayment(t, b.client, 100+i)
		want = append([]string{p.ID}, want...)
	}
	var got page[struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}]
	b.client.Get("/events?limit=2").Decode(t, &got)
	if len(got.Data) != 2 || got.Data[0].Data.ID != want[0] || got.Data[1].Data.ID != want[1] || !got.HasMore {
		t.Errorf("GET /events?limit=2 lists %+v, want the events of %v, newest first, and has_more", got, want[:2])
	}
}
