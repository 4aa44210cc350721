package handlers_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// TestCreateWebhookEndpointWithKey: the optional Idempotency-Key of POST /webhook-endpoints.
func TestCreateWebhookEndpointWithKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	endpoints := func(url string) int {
		return b.count(t, `SELECT count(*) FROM webhook_endpoints WHERE url = $1`, url)
	}

	t.Run("without a key, each request registers an endpoint", func(t *testing.T) {
		const url = publicURL + "/nokey"
		for range 2 {
			if res := b.client.Post("/webhook-endpoints", map[string]any{"url": url, "enabled_events": []string{"*"}}); res.Status != http.StatusCreated {
				t.Fatalf("%d %s", res.Status, res.Body)
			}
		}
		if got := endpoints(url); got != 2 {
			t.Errorf("%d endpoints, want 2", got)
		}
	})

	t.Run("a retry replays the endpoint and its secret, and registers nothing more", func(t *testing.T) {
		const url = publicURL + "/replayed"
		key := apitest.Header("Idempotency-Key", newKey())
		first := b.client.Post("/webhook-endpoints", `{"url":"`+url+`","enabled_events":["payment.succeeded"]}`, key)
		if first.Status != http.StatusCreated || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first: %d %s", first.Status, first.Body)
		}
		retry := b.client.Post("/webhook-endpoints", `{ "enabled_events": ["payment.succeeded"], "url": "`+url+`" }`, key)
		if retry.Status != http.StatusCreated || retry.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(retry.Body, first.Body) {
			t.Errorf("retry: %d replayed=%q %s, want a replay of\n%s", retry.Status, retry.Header.Get("Idempotent-Replayed"), retry.Body, first.Body)
		}
		for _, h := range []string{"Location", "ETag"} {
			if retry.Header.Get(h) != first.Header.Get(h) {
				t.Errorf("%s %q, first %q", h, retry.Header.Get(h), first.Header.Get(h))
			}
		}
		var e, again endpoint
		first.Decode(t, &e)
		retry.Decode(t, &again)
		if e.Secret == nil || again.Secret == nil || *again.Secret != *e.Secret {
			t.Errorf("secrets %v and %v, want one", deref(e.Secret), deref(again.Secret))
		}
		if got := endpoints(url); got != 1 {
			t.Errorf("%d endpoints, want 1", got)
		}
	})

	t.Run("the same key with another body is 422 and registers nothing", func(t *testing.T) {
		key := apitest.Header("Idempotency-Key", newKey())
		b.client.Post("/webhook-endpoints", map[string]any{"url": publicURL + "/a", "enabled_events": []string{"*"}}, key)
		res := b.client.Post("/webhook-endpoints", map[string]any{"url": publicURL + "/b", "enabled_events": []string{"*"}}, key)
		if res.Status != http.StatusUnprocessableEntity || res.Problem(t).Type != "/problems/idempotency-key-reused" {
			t.Errorf("%d %s, want 422 idempotency-key-reused", res.Status, res.Body)
		}
		if got := endpoints(publicURL + "/b"); got != 0 {
			t.Errorf("%d endpoints registered under a reused key", got)
		}
	})

	t.Run("the same key on another operation is another key", func(t *testing.T) {
		k := newKey()
		b.client.Post("/webhook-endpoints", map[string]any{"url": publicURL + "/shared", "enabled_events": []string{"*"}}, apitest.Header("Idempotency-Key", k))
		res := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", k))
		if res.Status != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != "" {
			t.Errorf("POST /payments with the key of POST /webhook-endpoints: %d replayed=%q %s",
				res.Status, res.Header.Get("Idempotent-Replayed"), res.Body)
		}
	})

	t.Run("a malformed key is 400, and a refused URL leaves the key unused", func(t *testing.T) {
		res := b.client.Post("/webhook-endpoints", map[string]any{"url": publicURL, "enabled_events": []string{"*"}}, apitest.Header("Idempotency-Key", ""))
		if res.Status != http.StatusBadRequest || res.Problem(t).Type != "/problems/invalid-idempotency-key" {
			t.Errorf("empty key: %d %s", res.Status, res.Body)
		}
		key := apitest.Header("Idempotency-Key", newKey())
		res = b.client.Post("/webhook-endpoints", map[string]any{"url": "https://10.0.0.1/x", "enabled_events": []string{"*"}}, key)
		if res.Status != http.StatusBadRequest || !hasFieldError(res.Problem(t), "/url") {
			t.Fatalf("private URL: %d %s", res.Status, res.Body)
		}
		res = b.client.Post("/webhook-endpoints", map[string]any{"url": publicURL + "/after", "enabled_events": []string{"*"}}, key)
		if res.Status != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != "" {
			t.Errorf("after a refused URL: %d %s, want a new 201", res.Status, res.Body)
		}
	})
}

// TestUpdateAndRotateWebhookEndpointWithKey: the optional key of PATCH /webhook-endpoints/{id}
// and of rotate-secret, where the request is the endpoint's id as well as the body.
func TestUpdateAndRotateWebhookEndpointWithKey(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("a PATCH retry replays its 200, though its If-Match is stale", func(t *testing.T) {
		e, v1 := createEndpoint(t, b.client, publicURL, "*")
		key := apitest.Header("Idempotency-Key", newKey())
		patch := func() *apitest.Response {
			return b.client.Patch("/webhook-endpoints/"+e.ID, `{"description":"once"}`, key, apitest.Header("If-Match", v1))
		}
		first, retry := patch(), patch()
		if first.Status != http.StatusOK || retry.Status != http.StatusOK || retry.Header.Get("Idempotent-Replayed") != "true" ||
			!bytes.Equal(retry.Body, first.Body) || retry.Header.Get("ETag") != first.Header.Get("ETag") {
			t.Errorf("first %d %s, retry %d replayed=%q %s", first.Status, first.Body, retry.Status, retry.Header.Get("Idempotent-Replayed"), retry.Body)
		}
	})

	t.Run("the same key on another endpoint is 422", func(t *testing.T) {
		e, eTag := createEndpoint(t, b.client, publicURL, "*")
		f, fTag := createEndpoint(t, b.client, publicURL, "*")
		key := apitest.Header("Idempotency-Key", newKey())
		b.client.Patch("/webhook-endpoints/"+e.ID, `{"description":"x"}`, key, apitest.Header("If-Match", eTag))
		res := b.client.Patch("/webhook-endpoints/"+f.ID, `{"description":"x"}`, key, apitest.Header("If-Match", fTag))
		if res.Status != http.StatusUnprocessableEntity || res.Problem(t).Type != "/problems/idempotency-key-reused" {
			t.Errorf("PATCH: %d %s, want 422", res.Status, res.Body)
		}
		rotate := apitest.Header("Idempotency-Key", newKey())
		b.client.Post("/webhook-endpoints/"+e.ID+"/rotate-secret", nil, rotate)
		res = b.client.Post("/webhook-endpoints/"+f.ID+"/rotate-secret", nil, rotate)
		if res.Status != http.StatusUnprocessableEntity || res.Problem(t).Type != "/problems/idempotency-key-reused" {
			t.Errorf("rotation: %d %s, want 422", res.Status, res.Body)
		}
		if got := b.client.Get("/webhook-endpoints/" + f.ID).Header.Get("ETag"); got != fTag {
			t.Errorf("the other endpoint changed: ETag %s, want %s", got, fTag)
		}
	})

	t.Run("a rotation retry replays the secret it issued and rotates once, though its If-Match is stale", func(t *testing.T) {
		e, v1 := createEndpoint(t, b.client, publicURL, "*")
		key := apitest.Header("Idempotency-Key", newKey())
		first := b.client.Post("/webhook-endpoints/"+e.ID+"/rotate-secret", nil, key, apitest.Header("If-Match", v1))
		retry := b.client.Post("/webhook-endpoints/"+e.ID+"/rotate-secret", nil, key, apitest.Header("If-Match", v1))
		if first.Status != http.StatusOK || retry.Status != http.StatusOK || retry.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(retry.Body, first.Body) {
			t.Fatalf("first %d %s, retry %d replayed=%q %s", first.Status, first.Body, retry.Status, retry.Header.Get("Idempotent-Replayed"), retry.Body)
		}
		if got := b.client.Get("/webhook-endpoints/" + e.ID).Header.Get("ETag"); got != `"v2"` || got != first.Header.Get("ETag") {
			t.Errorf("ETag %s after one rotation and its retry, want \"v2\"", got)
		}
	})
}

// TestRedeliverEventWithKey: a retry of a redelivery under its key replays the 202 and queues
// nothing again (the delivery is left as the first request requeued it). The event is part
// of the request: the key with the same body on another event is a 422, not a replay that
// would tell the client an event was queued when it was not.
func TestRedeliverEventWithKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sub, _ := createEndpoint(t, b.client, publicURL, "payment.succeeded")
	createPayment(t, b.client, 700)
	createPayment(t, b.client, 800)
	ds := deliveries(t, b.client, sub.ID)
	if len(ds) != 2 {
		t.Fatalf("deliveries %+v", ds)
	}
	updatedAt := func() string {
		var at string
		if err := b.pool.QueryRow(t.Context(), `SELECT updated_at::text FROM webhook_deliveries WHERE id = $1`, ds[0].ID).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	path := "/events/" + ds[0].EventID + "/redeliver"
	key := apitest.Header("Idempotency-Key", newKey())
	first := b.client.Post(path, map[string]any{"endpoint_id": sub.ID}, key)
	if first.Status != http.StatusAccepted {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	requeued := updatedAt()
	retry := b.client.Post(path, map[string]any{"endpoint_id": sub.ID}, key)
	if retry.Status != http.StatusAccepted || retry.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(retry.Body, first.Body) ||
		retry.Header.Get("Location") != first.Header.Get("Location") {
		t.Errorf("retry: %d replayed=%q %s", retry.Status, retry.Header.Get("Idempotent-Replayed"), retry.Body)
	}
	if got := updatedAt(); got != requeued {
		t.Errorf("the retry requeued the delivery again: updated_at %s, then %s", requeued, got)
	}
	if res := b.client.Post(path, nil, key); res.Status != http.StatusUnprocessableEntity || res.Problem(t).Type != "/problems/idempotency-key-reused" {
		t.Errorf("the key without the body: %d %s, want 422", res.Status, res.Body)
	}
	other := "/events/" + ds[1].EventID + "/redeliver"
	if res := b.client.Post(other, map[string]any{"endpoint_id": sub.ID}, key); res.Status != http.StatusUnprocessableEntity ||
		res.Problem(t).Type != "/problems/idempotency-key-reused" {
		t.Errorf("the key and body on another event: %d replayed=%q %s, want 422", res.Status, res.Header.Get("Idempotent-Replayed"), res.Body)
	}
}

// TestWebhookWritesWithKeyInFlight: a retry while the first request with the key waits inside
// its transaction, on a row lock the test holds, is 409 at once. A new endpoint's insert
// waits on its account's row (its foreign key); an update or a rotation on the endpoint's.
func TestWebhookWritesWithKeyInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lockEndpoint := func(id string) func() {
		return b.holdLocks(t, `SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR UPDATE`, id)
	}

	t.Run("POST /webhook-endpoints", func(t *testing.T) {
		key := apitest.Header("Idempotency-Key", newKey())
		b.inFlightThenReplayed(t, b.holdLocks(t, `SELECT 1 FROM accounts FOR UPDATE`), http.StatusCreated, func() *apitest.Response {
			return b.client.Post("/webhook-endpoints", map[string]any{"url": publicURL, "enabled_events": []string{"*"}}, key)
		})
	})
	t.Run("PATCH /webhook-endpoints/{id}", func(t *testing.T) {
		e, v1 := createEndpoint(t, b.client, publicURL, "*")
		key := apitest.Header("Idempotency-Key", newKey())
		b.inFlightThenReplayed(t, lockEndpoint(e.ID), http.StatusOK, func() *apitest.Response {
			return b.client.Patch("/webhook-endpoints/"+e.ID, `{"description":"held"}`, key, apitest.Header("If-Match", v1))
		})
	})
	t.Run("POST /webhook-endpoints/{id}/rotate-secret", func(t *testing.T) {
		e, _ := createEndpoint(t, b.client, publicURL, "*")
		key := apitest.Header("Idempotency-Key", newKey())
		b.inFlightThenReplayed(t, lockEndpoint(e.ID), http.StatusOK, func() *apitest.Response {
			return b.client.Post("/webhook-endpoints/"+e.ID+"/rotate-secret", nil, key)
		})
	})
}

// TestAWebhookURLRefusedNowStillReplays: a URL is checked when it is sent, and the check's
// answer may change (a redeploy that closes private networks, a host that now resolves
// elsewhere). A retry whose first request registered or moved the endpoint replays that
// answer, as a retry of any other write does; a new key is refused and stays unused.
func TestAWebhookURLRefusedNowStillReplays(t *testing.T) {
	t.Parallel()
	open := setup(t, withPrivateReceivers())
	strict := setup(t, withDatabase(open.dbURL)) // the same database after a redeploy

	const private = "http://127.0.0.1:3000/hooks"
	createKey := apitest.Header("Idempotency-Key", newKey())
	create := func(c *apitest.Client, key apitest.Option) *apitest.Response {
		return c.Post("/webhook-endpoints", map[string]any{"url": private, "enabled_events": []string{"*"}}, key)
	}
	first := create(open.client, createKey)
	if first.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", first.Status, first.Body)
	}
	if retry := create(strict.client, createKey); retry.Status != http.StatusCreated || retry.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(retry.Body, first.Body) {
		t.Errorf("create's retry: %d replayed=%q %s, want a replay of\n%s", retry.Status, retry.Header.Get("Idempotent-Replayed"), retry.Body, first.Body)
	}

	e, v1 := createEndpoint(t, open.client, publicURL, "*")
	patchKey := apitest.Header("Idempotency-Key", newKey())
	patch := func(c *apitest.Client) *apitest.Response {
		return c.Patch("/webhook-endpoints/"+e.ID, map[string]any{"url": private}, patchKey, apitest.Header("If-Match", v1))
	}
	moved := patch(open.client)
	if moved.Status != http.StatusOK {
		t.Fatalf("PATCH: %d %s", moved.Status, moved.Body)
	}
	if retry := patch(strict.client); retry.Status != http.StatusOK || retry.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(retry.Body, moved.Body) {
		t.Errorf("PATCH's retry: %d replayed=%q %s, want a replay of\n%s", retry.Status, retry.Header.Get("Idempotent-Replayed"), retry.Body, moved.Body)
	}

	fresh := apitest.Header("Idempotency-Key", newKey())
	if res := create(strict.client, fresh); res.Status != http.StatusBadRequest || !hasFieldError(res.Problem(t), "/url") {
		t.Errorf("a new key: %d %s, want 400 naming /url", res.Status, res.Body)
	}
	if res := create(open.client, fresh); res.Status != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("the refused key, where the URL is allowed: %d %s, want a new 201", res.Status, res.Body)
	}
}
