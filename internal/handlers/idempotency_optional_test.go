package handlers_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// TestUpdatePaymentWithoutKey: without an Idempotency-Key a PATCH runs as it always did: a
// retry runs again (here it meets its own stale If-Match) and no key is recorded.
func TestUpdatePaymentWithoutKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p, v1 := createPayment(t, b.client, 100)

	if res := patchPayment(b.client, p.ID, v1, `{"description":"once"}`); res.Status != http.StatusOK || res.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("PATCH: %d replayed=%q %s", res.Status, res.Header.Get("Idempotent-Replayed"), res.Body)
	}
	if res := patchPayment(b.client, p.ID, v1, `{"description":"once"}`); res.Status != http.StatusPreconditionFailed {
		t.Errorf("the same PATCH again, without a key: %d %s, want 412", res.Status, res.Body)
	}
	if got := b.count(t, `SELECT count(*) FROM idempotency_keys WHERE operation = 'payments.update'`); got != 0 {
		t.Errorf("%d keys recorded for PATCHes sent without one", got)
	}
}

// TestUpdatePaymentWithKey: a PATCH sent with an Idempotency-Key is idempotent as a create
// is: its 200 is stored with the update and replayed to a retry, whose If-Match is stale by
// then; another request under the key (another body, another payment) is 422.
func TestUpdatePaymentWithKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	updates := func(id string) int {
		return b.count(t, `SELECT count(*) FROM events WHERE type = 'payment.updated' AND data->>'id' = $1`, id)
	}

	t.Run("a retry replays the 200 byte for byte, though its If-Match is stale", func(t *testing.T) {
		p, v1 := createPayment(t, b.client, 100)
		key := apitest.Header("Idempotency-Key", newKey())
		first := patchPayment(b.client, p.ID, v1, `{"description":"retried","metadata":{"a":"1","b":"2"}}`, key)
		if first.Status != http.StatusOK || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first PATCH: %d replayed=%q %s", first.Status, first.Header.Get("Idempotent-Replayed"), first.Body)
		}
		replay := patchPayment(b.client, p.ID, v1, "{\"metadata\": {\"b\": \"2\", \"a\": \"1\"}, \"description\": \"retried\"}", key)
		if replay.Status != http.StatusOK || replay.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(replay.Body, first.Body) {
			t.Errorf("retry: %d replayed=%q %s, want a replay of\n%s", replay.Status, replay.Header.Get("Idempotent-Replayed"), replay.Body, first.Body)
		}
		if got, want := replay.Header.Get("ETag"), first.Header.Get("ETag"); got != want || got == v1 {
			t.Errorf("replayed ETag %q, first %q (created %q)", got, want, v1)
		}
		if got := updates(p.ID); got != 1 {
			t.Errorf("%d payment.updated events, want 1", got)
		}
	})

	t.Run("the same key with another body is 422 and changes nothing", func(t *testing.T) {
		p, v1 := createPayment(t, b.client, 100)
		key := apitest.Header("Idempotency-Key", newKey())
		v2 := patchPayment(b.client, p.ID, v1, `{"description":"first"}`, key).Header.Get("ETag")
		res := patchPayment(b.client, p.ID, v2, `{"description":"second"}`, key)
		if res.Status != http.StatusUnprocessableEntity || res.Problem(t).Type != "/problems/idempotency-key-reused" {
			t.Errorf("%d %s, want 422 idempotency-key-reused", res.Status, res.Body)
		}
		assertPayment(t, b.client, p.ID, v2, ptr("first"))
	})

	t.Run("the same key and body on another payment is 422: the id is part of the request", func(t *testing.T) {
		p, pTag := createPayment(t, b.client, 100)
		q, qTag := createPayment(t, b.client, 100)
		key := apitest.Header("Idempotency-Key", newKey())
		if res := patchPayment(b.client, p.ID, pTag, `{"description":"same"}`, key); res.Status != http.StatusOK {
			t.Fatalf("PATCH %s: %d %s", p.ID, res.Status, res.Body)
		}
		res := patchPayment(b.client, q.ID, qTag, `{"description":"same"}`, key)
		if res.Status != http.StatusUnprocessableEntity || res.Problem(t).Type != "/problems/idempotency-key-reused" {
			t.Errorf("PATCH %s with the key of %s: %d %s, want 422", q.ID, p.ID, res.Status, res.Body)
		}
		assertPayment(t, b.client, q.ID, qTag, nil)
	})

	t.Run("a key used on another operation is another key", func(t *testing.T) {
		k := newKey()
		created := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", k))
		var p payment
		created.Decode(t, &p)
		res := patchPayment(b.client, p.ID, created.Header.Get("ETag"), `{"description":"mine"}`, apitest.Header("Idempotency-Key", k))
		if res.Status != http.StatusOK || res.Header.Get("Idempotent-Replayed") != "" {
			t.Errorf("PATCH with the key of POST /payments: %d replayed=%q %s, want a new 200",
				res.Status, res.Header.Get("Idempotent-Replayed"), res.Body)
		}
		if got := updates(p.ID); got != 1 {
			t.Errorf("%d payment.updated events, want 1", got)
		}
	})

	t.Run("a 412 or a 428 commits nothing and leaves the key unused", func(t *testing.T) {
		p, v1 := createPayment(t, b.client, 100)
		key := apitest.Header("Idempotency-Key", newKey())
		if res := patchPayment(b.client, p.ID, `"v9"`, `{"description":"x"}`, key); res.Status != http.StatusPreconditionFailed {
			t.Fatalf("stale If-Match: %d %s", res.Status, res.Body)
		}
		if res := patchPayment(b.client, p.ID, "", `{"description":"x"}`, key); res.Status != http.StatusPreconditionRequired {
			t.Fatalf("no If-Match: %d %s", res.Status, res.Body)
		}
		res := patchPayment(b.client, p.ID, v1, `{"description":"x"}`, key)
		if res.Status != http.StatusOK || res.Header.Get("Idempotent-Replayed") != "" {
			t.Errorf("after a 412 and a 428: %d replayed=%q %s, want a new 200", res.Status, res.Header.Get("Idempotent-Replayed"), res.Body)
		}
	})

	t.Run("a malformed key is 400", func(t *testing.T) {
		p, v1 := createPayment(t, b.client, 100)
		for _, k := range []string{"", strings.Repeat("k", 256), "caf\u00e9"} {
			res := patchPayment(b.client, p.ID, v1, `{"description":"x"}`, apitest.Header("Idempotency-Key", k))
			if res.Status != http.StatusBadRequest || res.Problem(t).Type != "/problems/invalid-idempotency-key" {
				t.Errorf("key %q: %d %s, want 400 invalid-idempotency-key", k, res.Status, res.Body)
			}
		}
		assertPayment(t, b.client, p.ID, v1, nil)
	})
}

// TestUpdatePaymentWithKeyInFlight: a retry while the first PATCH with the key waits inside
// its transaction (on the payment's row lock, held by the test) is 409 at once.
func TestUpdatePaymentWithKeyInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p, v1 := createPayment(t, b.client, 100)
	key := apitest.Header("Idempotency-Key", newKey())
	b.inFlightThenReplayed(t, b.lockPayment(t, p.ID), http.StatusOK, func() *apitest.Response {
		return patchPayment(b.client, p.ID, v1, `{"description":"held"}`, key)
	})
}

// inFlightThenReplayed is how the in-flight answer of an optional key is put to the test:
// with release holding a row lock that the operation waits on once it has claimed its key,
// send goes once in the background and, when PostgreSQL shows it blocked, once more. That
// retry must be answered 409 with Retry-After at once: without the claim it would wait on the
// same lock, until the client's timeout. Once released, the first answers want, and a third
// send replays it.
func (b *testBundle) inFlightThenReplayed(t *testing.T, release func(), want int, send func() *apitest.Response) {
	t.Helper()
	first := make(chan *apitest.Response, 1)
	go func() { first <- send() }()
	b.waitUntilBlocked(t, 1)
	retry := send()
	if retry.Status != http.StatusConflict || retry.Problem(t).Type != "/problems/idempotency-key-in-use" || retry.Header.Get("Retry-After") == "" {
		t.Errorf("retry while the first is in flight: %d %s, want 409 with Retry-After", retry.Status, retry.Body)
	}
	release()
	res := <-first
	if res.Status != want || res.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first request: %d %s, want %d", res.Status, res.Body, want)
	}
	if again := send(); again.Status != want || again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, res.Body) {
		t.Errorf("retry after the first committed: %d replayed=%q %s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body)
	}
}
