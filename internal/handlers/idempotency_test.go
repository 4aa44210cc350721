package handlers_test

import (
	"bytes"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// TestParallelRetriesChargeOnce fires 64 identical POSTs at once at two server instances
// sharing one database. Whichever claims the key first is held inside its transaction (its
// charge waits on a gate) until all 63 others have answered: each must be a 409 with
// Retry-After, not a wait for the winner. Then exactly one payment commits, and 64 more
// retries in parallel are byte-identical replays of it.
func TestParallelRetriesChargeOnce(t *testing.T) {
	t.Parallel()
	gate := newGatedProcessor()
	b := setup(t, withProcessor(gate))
	clients := []*apitest.Client{b.client, b.secondInstance(t).client}
	t.Cleanup(gate.open) // before the servers close: Close waits for the held request
	key := newKey()
	const n = 64

	answers := make(chan *apitest.Response, n)
	for i := range n {
		go func() { answers <- clients[i%2].Post("/payments", visa(5000), apitest.Header("Idempotency-Key", key)) }()
	}
	// With the winner held, nothing commits: n-1 answers arrive only if they do not wait for
	// it (each is bounded by the client's timeout when they do).
	inUse := 0
	for range n - 1 {
		res := <-answers
		if res.Status != http.StatusConflict {
			t.Errorf("retry while the first is in flight: %d %s, want 409", res.Status, res.Body)
			continue
		}
		inUse++
		if p := res.Problem(t); p.Type != "/problems/idempotency-key-in-use" || res.Header.Get("Retry-After") == "" {
			t.Errorf("409 %s without Retry-After %q", p.Type, res.Header.Get("Retry-After"))
		}
	}
	gate.open()
	winner := <-answers
	if winner.Status != http.StatusCreated || winner.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the request that claimed the key: %d replayed=%q %s (and %d of %d others got 409)",
			winner.Status, winner.Header.Get("Idempotent-Replayed"), winner.Body, inUse, n-1)
	}
	if calls := gate.calls.Load(); calls != 1 {
		t.Errorf("processor charged %d times, want 1", calls)
	}
	if got := b.count(t, `SELECT count(*) FROM payments`); got != 1 {
		t.Errorf("%d payment rows, want 1", got)
	}
	if got := b.count(t, `SELECT count(*) FROM events WHERE type = 'payment.succeeded'`); got != 1 {
		t.Errorf("%d payment.succeeded events, want 1", got)
	}

	// Once the winner has committed, every retry is a replay of it, even when replays meet
	// each other on the key's lock.
	for i := range n {
		go func() { answers <- clients[i%2].Post("/payments", visa(5000), apitest.Header("Idempotency-Key", key)) }()
	}
	for range n {
		res := <-answers
		if res.Status != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(res.Body, winner.Body) {
			t.Errorf("retry after completion: %d replayed=%q %s, want a replay of\n%s",
				res.Status, res.Header.Get("Idempotent-Replayed"), res.Body, winner.Body)
		}
	}
}

// TestSlowChargesLeaveConnectionsForTheRest holds more creates in their charge than the pool
// has connections, as a burst of slow cards would: each charge keeps its transaction open.
// Meanwhile another account's list is answered, and so is the 409 of a retry of a create
// that is charging: the creates beyond idempotency.Gate's slots wait for one without a
// connection, so they do not take the pool's last ones. Then every create commits.
func TestSlowChargesLeaveConnectionsForTheRest(t *testing.T) {
	t.Parallel()
	gate := newGatedProcessor()
	b := setup(t, withProcessor(gate))
	t.Cleanup(gate.open)
	n := int(b.pool.Config().MaxConns) + 5
	keys := make([]string, n)
	answers := make(chan *apitest.Response, n)
	create := func(key string) {
		answers <- b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", key))
	}
	keys[0] = newKey()
	go create(keys[0])
	gate.waitCharging(t) // the first create holds its key, and a slot
	for i := 1; i < n; i++ {
		keys[i] = newKey()
		go create(keys[i])
	}
	slots := int32(idempotency.NewGate(b.pool).Size()) // the server's gate, on the same pool
	waitUntil(t, func() bool { return gate.calls.Load() >= slots })

	if res := b.other.Get("/payments"); res.Status != http.StatusOK {
		t.Errorf("another account's list while %d creates charge: %d %s", n, res.Status, res.Body)
	}
	if res := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", keys[0])); res.Status != http.StatusConflict {
		t.Errorf("a retry of a create that is charging: %d %s, want 409 at once", res.Status, res.Body)
	}
	gate.open()
	for range n {
		if res := <-answers; res.Status != http.StatusCreated {
			t.Errorf("a create held in its charge: %d %s", res.Status, res.Body)
		}
	}
	if got := b.count(t, `SELECT count(*) FROM payments`); got != n {
		t.Errorf("%d payments, want %d", got, n)
	}
}

// TestInFlightRetriesAnswerBeforeTheWinnerCommits holds the first request inside its
// transaction (its charge blocks) and shows that retries on both instances are answered 409
// meanwhile, with nothing committed yet: they do not wait for the winner. Were they to wait,
// the client's timeout turns the deadlock into failed requests.
func TestInFlightRetriesAnswerBeforeTheWinnerCommits(t *testing.T) {
	t.Parallel()
	gate := newGatedProcessor()
	b := setup(t, withProcessor(gate))
	clients := []*apitest.Client{b.client, b.secondInstance(t).client}
	t.Cleanup(gate.open) // before the servers close: Close waits for the held request
	key := newKey()

	first := make(chan *apitest.Response, 1)
	go func() { first <- b.client.Post("/payments", visa(700), apitest.Header("Idempotency-Key", key)) }()
	gate.waitCharging(t) // the first request has claimed the key and is charging

	const n = 16
	retries := make(chan *apitest.Response, n)
	for i := range n {
		go func() {
			retries <- clients[i%2].Post("/payments", visa(700), apitest.Header("Idempotency-Key", key))
		}()
	}
	for range n {
		if res := <-retries; res.Status != http.StatusConflict || res.Header.Get("Retry-After") == "" {
			t.Errorf("retry while in flight: %d %s, want 409 with Retry-After", res.Status, res.Body)
		}
	}
	if got := b.count(t, `SELECT count(*) FROM payments`); got != 0 {
		t.Errorf("%d payments committed while the first request was in flight", got)
	}

	gate.open()
	if res := <-first; res.Status != http.StatusCreated {
		t.Fatalf("first request: %d %s", res.Status, res.Body)
	}
	if calls := gate.calls.Load(); calls != 1 {
		t.Errorf("processor charged %d times, want 1", calls)
	}
}

// TestOneKeyInTwoAccountsIsTwoKeys: a key is the account's own, so another account using the
// same key while the first account's use is in flight is not answered 409: it charges too.
// The first request is held inside its transaction while the second arrives.
func TestOneKeyInTwoAccountsIsTwoKeys(t *testing.T) {
	t.Parallel()
	gate := newGatedProcessor()
	b := setup(t, withProcessor(gate))
	t.Cleanup(gate.open) // before the server closes: Close waits for the held requests
	key := apitest.Header("Idempotency-Key", newKey())

	first := make(chan *apitest.Response, 1)
	go func() { first <- b.client.Post("/payments", visa(700), key) }()
	gate.waitCharging(t)
	second := make(chan *apitest.Response, 1)
	go func() { second <- b.other.Post("/payments", visa(700), key) }()
	for gate.calls.Load() < 2 { // the second account's request reaches its charge
		select {
		case res := <-second:
			t.Fatalf("the other account's use of the key while the first's is in flight: %d %s, want it charged", res.Status, res.Body)
		case <-time.After(10 * time.Millisecond):
		}
	}
	gate.open()
	for _, res := range []*apitest.Response{<-first, <-second} {
		if res.Status != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != "" {
			t.Errorf("%d %s, want each account's own 201", res.Status, res.Body)
		}
	}
}

// TestFailedAttemptLeavesNothingClaimed: when the transaction that claimed the key fails,
// the claim rolls back with everything else, and the retry runs the charge again.
func TestFailedAttemptLeavesNothingClaimed(t *testing.T) {
	t.Parallel()
	flaky := &flakyProcessor{}
	flaky.failures.Store(1)
	b := setup(t, withProcessor(flaky))
	key := newKey()

	res := b.client.Post("/payments", visa(1200), apitest.Header("Idempotency-Key", key))
	if res.Status != http.StatusServiceUnavailable || res.Problem(t).Type != "/problems/processor-unavailable" {
		t.Fatalf("first attempt: %d %s", res.Status, res.Body)
	}
	if res.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	for _, table := range []string{"payments", "idempotency_keys", "events"} {
		if got := b.count(t, `SELECT count(*) FROM `+table); got != 0 {
			t.Errorf("%d rows left in %s after the failed attempt", got, table)
		}
	}

	res = b.client.Post("/payments", visa(1200), apitest.Header("Idempotency-Key", key))
	if res.Status != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry: %d replayed=%q %s", res.Status, res.Header.Get("Idempotent-Replayed"), res.Body)
	}
	if calls := flaky.calls.Load(); calls != 2 {
		t.Errorf("processor called %d times, want 2 (the retry ran again)", calls)
	}
}

// TestProcessingErrorCardIsNeverStored: the outage test card answers 503 on every attempt,
// and no attempt leaves a payment or uses up the key.
func TestProcessingErrorCardIsNeverStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := newKey()
	body := map[string]any{"amount": 100, "currency": "usd", "payment_method": processor.CardProcessingError}
	for attempt := range 2 {
		res := b.client.Post("/payments", body, apitest.Header("Idempotency-Key", key))
		if res.Status != http.StatusServiceUnavailable || res.Header.Get("Idempotent-Replayed") != "" {
			t.Errorf("attempt %d: %d %s", attempt, res.Status, res.Body)
		}
	}
	if got := b.count(t, `SELECT count(*) FROM idempotency_keys`) + b.count(t, `SELECT count(*) FROM payments`); got != 0 {
		t.Errorf("%d rows stored for a failed charge", got)
	}
}

func TestIdempotentReplays(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("a completed request replays byte for byte, whatever the body's spacing and order", func(t *testing.T) {
		key := newKey()
		original := b.client.Post("/payments", `{"amount":2500,"currency":"usd","payment_method":"pm_card_visa","metadata":{"a":"1","b":"2"}}`,
			apitest.Header("Idempotency-Key", key))
		if original.Status != http.StatusCreated {
			t.Fatalf("%d %s", original.Status, original.Body)
		}
		reordered := "{\n  \"metadata\": {\"b\": \"2\", \"a\": \"1\"},\n  \"payment_method\": \"pm_card_visa\",\n  \"currency\": \"usd\",\n  \"amount\": 2500\n}"
		for _, k := range []string{key, `"` + key + `"`} { // bare, and as a structured-field string
			replay := b.client.Post("/payments", reordered, apitest.Header("Idempotency-Key", k))
			if replay.Status != http.StatusCreated || !bytes.Equal(replay.Body, original.Body) {
				t.Errorf("key %s: %d %s", k, replay.Status, replay.Body)
			}
			if replay.Header.Get("Idempotent-Replayed") != "true" {
				t.Error("replay without Idempotent-Replayed: true")
			}
			for _, h := range []string{"Location", "ETag", "Content-Type"} {
				if replay.Header.Get(h) != original.Header.Get(h) {
					t.Errorf("%s %q, original %q", h, replay.Header.Get(h), original.Header.Get(h))
				}
			}
			if replay.Header.Get("Request-Id") == original.Header.Get("Request-Id") {
				t.Error("a replay is a new request and needs its own Request-Id")
			}
		}
		if got := b.count(t, `SELECT count(*) FROM payments WHERE amount = 2500`); got != 1 {
			t.Errorf("%d payments, want 1", got)
		}
	})

	t.Run("an amount written 2600.0, 26e2 or 2.6E3 is 2600, and the same request", func(t *testing.T) {
		key := apitest.Header("Idempotency-Key", newKey())
		body := func(amount string) string {
			return `{"amount":` + amount + `,"currency":"usd","payment_method":"pm_card_visa"}`
		}
		first := b.client.Post("/payments", body("2600.0"), key)
		var p payment
		first.Decode(t, &p)
		if first.Status != http.StatusCreated || p.Amount != 2600 {
			t.Fatalf("amount 2600.0: %d %s, want 201 with amount 2600", first.Status, first.Body)
		}
		for _, amount := range []string{"2600", "26e2", "2.6E3", "26000e-1"} {
			replay := b.client.Post("/payments", body(amount), key)
			if replay.Status != http.StatusCreated || replay.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(replay.Body, first.Body) {
				t.Errorf("amount %s with the key of 2600.0: %d replayed=%q %s, want its replay", amount, replay.Status, replay.Header.Get("Idempotent-Replayed"), replay.Body)
			}
		}
		if res := b.client.Post("/payments", body("2600.5"), key); res.Status != http.StatusBadRequest {
			t.Errorf("amount 2600.5: %d %s, want 400", res.Status, res.Body)
		}
	})

	t.Run("same key, different body is 422 and creates nothing", func(t *testing.T) {
		key := newKey()
		b.client.Post("/payments", visa(3000), apitest.Header("Idempotency-Key", key))
		res := b.client.Post("/payments", visa(3001), apitest.Header("Idempotency-Key", key))
		if res.Status != http.StatusUnprocessableEntity || res.Problem(t).Type != "/problems/idempotency-key-reused" {
			t.Errorf("%d %s", res.Status, res.Body)
		}
		if got := b.count(t, `SELECT count(*) FROM payments WHERE amount IN (3000, 3001)`); got != 1 {
			t.Errorf("%d payments, want 1", got)
		}
	})

	t.Run("a declined payment's 402 is stored and replayed", func(t *testing.T) {
		key := newKey()
		body := map[string]any{"amount": 4000, "currency": "usd", "payment_method": processor.CardInsufficientFunds}
		first := b.client.Post("/payments", body, apitest.Header("Idempotency-Key", key))
		p := first.Problem(t)
		if first.Status != http.StatusPaymentRequired || p.Type != "/problems/payment-declined" || p.Raw["failure_code"] != "insufficient_funds" {
			t.Fatalf("%d %s", first.Status, first.Body)
		}
		var stored payment
		b.client.Get("/payments/"+p.Raw["payment_id"].(string)).Decode(t, &stored)
		if stored.Status != "failed" || stored.FailureCode == nil || *stored.FailureCode != "insufficient_funds" {
			t.Errorf("stored payment %+v", stored)
		}
		again := b.client.Post("/payments", body, apitest.Header("Idempotency-Key", key))
		if again.Status != http.StatusPaymentRequired || !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay of the decline: %d %s", again.Status, again.Body)
		}
		if got := b.count(t, `SELECT count(*) FROM events WHERE type = 'payment.failed'`); got != 1 {
			t.Errorf("%d payment.failed events, want 1", got)
		}
	})

	t.Run("a rejected request does not use up its key", func(t *testing.T) {
		key := newKey()
		bad := b.client.Post("/payments", map[string]any{"amount": -1, "currency": "usd", "payment_method": "pm_card_visa"},
			apitest.Header("Idempotency-Key", key))
		if bad.Status != http.StatusBadRequest {
			t.Fatalf("%d %s", bad.Status, bad.Body)
		}
		if res := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", key)); res.Status != http.StatusCreated {
			t.Errorf("the key was used up by a 400: %d %s", res.Status, res.Body)
		}
	})

	t.Run("keys belong to an account and an operation", func(t *testing.T) {
		key := newKey()
		mine := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", key))
		theirs := b.other.Post("/payments", visa(100), apitest.Header("Idempotency-Key", key))
		if theirs.Status != http.StatusCreated || theirs.Header.Get("Idempotent-Replayed") != "" || bytes.Equal(mine.Body, theirs.Body) {
			t.Errorf("another account's key collided: %d %s", theirs.Status, theirs.Body)
		}
	})

	// Each refusal names the header in errors[], as an invalid-request names its fields.
	t.Run("bad keys are 400", func(t *testing.T) {
		for _, tt := range []struct {
			name    string
			opt     apitest.Option
			message string
		}{
			{"missing", func(*http.Request) {},
				"the header is missing; send a unique key (a UUID, say) with each new request, and the same key when you retry it"},
			{"empty", apitest.Header("Idempotency-Key", ""), "the key is empty"},
			{"too long", apitest.Header("Idempotency-Key", strings.Repeat("k", 256)), "the key is longer than 255 characters"},
			{"not printable", apitest.Header("Idempotency-Key", "caf\u00e9"), "the key must be printable ASCII"},
			{"bad sf-string", apitest.Header("Idempotency-Key", `"open`), "a quoted key must be one structured-field string"},
			{"sent twice", func(r *http.Request) { r.Header["Idempotency-Key"] = []string{"k-1", "k-2"} }, "send the header once"},
		} {
			res := b.client.Post("/payments", visa(100), tt.opt)
			p := res.Problem(t)
			want := []map[string]any{{"field": "Idempotency-Key", "message": tt.message}}
			if res.Status != http.StatusBadRequest || p.Type != "/problems/invalid-idempotency-key" ||
				!slices.EqualFunc(p.Errors, want, maps.Equal) {
				t.Errorf("%s key: %d %s, want errors %v", tt.name, res.Status, res.Body, want)
			}
		}
	})
}
