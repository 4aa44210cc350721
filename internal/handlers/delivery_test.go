package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/webhooks"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// TestPaymentWebhookArrivesSigned: a payment's event reaches a subscribed receiver, signed so
// that our verifier and the official Standard Webhooks library both accept it.
func TestPaymentWebhookArrivesSigned(t *testing.T) {
	t.Parallel()
	b := setupDelivery(t, defaultDelivery)
	url, got := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	e, _ := createEndpoint(t, b.client, url, "payment.succeeded")
	p, _ := createPayment(t, b.client, 5000)

	h := next(t, got, 5*time.Second)
	ours, err := webhooks.NewVerifier(*e.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := ours.Verify(h.header, h.body); err != nil {
		t.Fatalf("our verifier: %v", err)
	}
	official, err := standardwebhooks.NewWebhook(*e.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := official.Verify(h.body, h.header); err != nil {
		t.Fatalf("official library: %v", err)
	}
	var event struct {
		Type string `json:"type"`
		Data struct {
			ID     string `json:"id"`
			Amount int    `json:"amount"`
		} `json:"data"`
	}
	if err := json.Unmarshal(h.body, &event); err != nil {
		t.Fatal(err)
	}
	if event.Type != "payment.succeeded" || event.Data.ID != p.ID || event.Data.Amount != 5000 {
		t.Fatalf("received %s", h.body)
	}
	waitDelivered(t, b, e.ID, 1)
}

// TestRetriedUntilDeliveredWithOneWebhookID: 500, 500, 200 with WEBHOOK_RETRY_SCHEDULE=1s,1s,1s
// is delivered on the third attempt, one webhook-id throughout, and the three attempts are
// listed.
func TestRetriedUntilDeliveredWithOneWebhookID(t *testing.T) {
	t.Parallel()
	b := setupDelivery(t, defaultDelivery)
	var mu sync.Mutex
	codes := []int{500, 500, 200}
	url, got := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(codes[0])
		codes = codes[1:]
	})
	e, _ := createEndpoint(t, b.client, url, "payment.succeeded")
	createPayment(t, b.client, 100)

	ids := map[string]bool{}
	var times []time.Time
	for range 3 {
		h := next(t, got, 5*time.Second)
		ids[h.header.Get(webhooks.HeaderID)] = true
		times = append(times, h.at)
	}
	for i := 1; i < 3; i++ {
		if gap := times[i].Sub(times[i-1]); gap < 800*time.Millisecond {
			t.Errorf("retry %d came %s after the attempt before it; want about 1s", i, gap)
		}
	}
	d := waitDelivered(t, b, e.ID, 1)[0]
	if len(ids) != 1 || !ids[d.ID] {
		t.Fatalf("webhook-ids %v; want only the delivery's %s", ids, d.ID)
	}
	if len(d.Attempts) != 3 {
		t.Fatalf("%d attempts listed, want 3", len(d.Attempts))
	}
	for i, a := range d.Attempts {
		want := []int{500, 500, 200}[i]
		if a.Attempt != i+1 || a.ResponseStatus == nil || *a.ResponseStatus != want {
			t.Errorf("attempt %d: %+v, want status %d", i+1, a, want)
		}
	}
	select {
	case h := <-got:
		t.Fatalf("a fourth request after the success: %s", h.body)
	case <-time.After(1500 * time.Millisecond):
	}
}

// TestGoneDisablesTheEndpoint: a receiver answering 410 disables its endpoint at once, and
// is not called again.
func TestGoneDisablesTheEndpoint(t *testing.T) {
	t.Parallel()
	b := setupDelivery(t, defaultDelivery)
	url, got := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) })
	e, _ := createEndpoint(t, b.client, url, "payment.succeeded")
	createPayment(t, b.client, 100)
	next(t, got, 5*time.Second)

	deadline := time.Now().Add(5 * time.Second)
	for {
		var ep endpoint
		b.client.Get("/webhook-endpoints/"+e.ID).Decode(t, &ep)
		if ep.Disabled && ep.DisabledReason != nil && *ep.DisabledReason == "gone" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("endpoint %+v five seconds after a 410", ep)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ds := deliveries(t, b.client, e.ID); len(ds) != 1 || ds[0].Status != "failed" || len(ds[0].Attempts) != 1 {
		t.Fatalf("deliveries after 410: %+v", ds)
	}
	createPayment(t, b.client, 200)
	select {
	case h := <-got:
		t.Fatalf("the disabled endpoint was called again: %s", h.body)
	case <-time.After(1500 * time.Millisecond):
	}
}

// TestTwoAttemptsThatDisableTheirEndpointAreBothRecorded: recording an attempt locks its
// delivery and then updates the endpoint; the attempt that disables the endpoint then fails
// its pending deliveries. Two attempts answered 410 at once each hold their own delivery, so
// the first must leave the second's alone (it fails its own) rather than wait for it while
// the second waits for the endpoint. The test holds the endpoint's row until both records
// wait for it, then lets go: each delivery has its one attempt recorded, and no transaction
// was rolled back to break a deadlock.
func TestTwoAttemptsThatDisableTheirEndpointAreBothRecorded(t *testing.T) {
	t.Parallel()
	b := setupDelivery(t, defaultDelivery)
	together := newOverlap(2, 10*time.Second)
	answer := make(chan struct{})
	letAnswer := sync.OnceFunc(func() { close(answer) })
	t.Cleanup(letAnswer)
	url, _ := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		together.wait()
		<-answer
		w.WriteHeader(http.StatusGone)
	})
	e, _ := createEndpoint(t, b.client, url, "payment.succeeded")
	createPayment(t, b.client, 100)
	createPayment(t, b.client, 200)
	for deadline := time.Now().Add(10 * time.Second); !together.reached(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the two attempts were never in flight together")
		}
	}
	release := b.holdLocks(t, `SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR UPDATE`, e.ID)
	letAnswer()
	b.waitUntil(t, "both records waiting for the endpoint", func(blocked int) bool { return blocked >= 2 })
	release()

	deadline := time.Now().Add(10 * time.Second)
	for {
		ds := deliveries(t, b.client, e.ID)
		done := len(ds) == 2
		for _, d := range ds {
			done = done && d.Status == "failed" && d.AttemptCount == 1
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries: %+v; want both failed with their one attempt recorded", ds)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := b.count(t, `SELECT count(*) FROM river_job WHERE queue = 'webhooks' AND cardinality(errors) > 0`); n != 0 {
		t.Errorf("%d webhook jobs failed a run (a record rolled back to break a deadlock)", n)
	}
}

// TestAnEndpointDeletedWhileAnAttemptIsRecordedTakesItsTurn: recording an attempt locks its
// delivery and then updates the endpoint; deleting the endpoint locks its deliveries before
// the endpoint's row, in the same order, so the two take turns. The test holds the
// delivery's row until the record and the deletion both wait for it, then lets go: the
// attempt is recorded, then the endpoint deleted, and neither is rolled back.
func TestAnEndpointDeletedWhileAnAttemptIsRecordedTakesItsTurn(t *testing.T) {
	t.Parallel()
	b := setupDelivery(t, defaultDelivery)
	answer := make(chan struct{})
	letAnswer := sync.OnceFunc(func() { close(answer) })
	t.Cleanup(letAnswer)
	// A failure, which the record writes on the endpoint's row (a success on an endpoint
	// with no failures to clear writes nothing there).
	url, got := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		<-answer
		w.WriteHeader(http.StatusInternalServerError)
	})
	e, _ := createEndpoint(t, b.client, url, "payment.succeeded")
	createPayment(t, b.client, 100)
	next(t, got, 10*time.Second) // the attempt is in flight
	release := b.holdLocks(t, `SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1 FOR UPDATE`, e.ID)
	letAnswer()
	b.waitUntilStatementBlocked(t, "webhook_deliveries") // the record waits for its delivery
	deleted := make(chan *apitest.Response, 1)
	go func() { deleted <- b.client.Do(http.MethodDelete, "/webhook-endpoints/"+e.ID, nil) }()
	b.waitUntilBlocked(t, 2) // the deletion waits for it too
	release()

	if res := <-deleted; res.Status != http.StatusNoContent {
		t.Errorf("the deletion: %d %s, want 204", res.Status, res.Body)
	}
	b.waitUntil(t, "the delivery's job to end", func(int) bool {
		return b.count(t, `SELECT count(*) FROM river_job WHERE queue = 'webhooks' AND finalized_at IS NULL`) == 0
	})
	if n := b.count(t, `SELECT count(*) FROM river_job WHERE queue = 'webhooks' AND cardinality(errors) > 0`); n != 0 {
		t.Errorf("%d webhook jobs failed a run (a record rolled back to break a deadlock)", n)
	}
}

// waitDelivered waits until the endpoint has n deliveries, all succeeded, and returns them.
func waitDelivered(t *testing.T, b *testBundle, endpointID string, n int) []delivery {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ds := deliveries(t, b.client, endpointID)
		done := len(ds) == n
		for _, d := range ds {
			done = done && d.Status == "succeeded"
		}
		if done {
			return ds
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries of %s: %+v; want %d succeeded", endpointID, ds, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHungReceiversDelayOnlyTheirOwnDeliveries: receivers that never answer (within a
// WEBHOOK_TIMEOUT longer than the test) are held to their caps of attempts in flight, and an
// event for another endpoint still arrives within 2 s:
//   - fifty deliveries queued for one hung endpoint get MaxInFlightPerEndpoint attempts;
//   - an account whose twelve endpoints all hang could, two attempts each, take every one of
//     the twenty workers; it gets MaxInFlightPerAccount, and another account's event arrives.
func TestHungReceiversDelayOnlyTheirOwnDeliveries(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name                string
		endpoints, payments int
		inFlight            int
		otherAccount        bool
	}{
		{"one endpoint", 1, 50, webhooks.MaxInFlightPerEndpoint, false},
		{"one account's endpoints", 12, 3, webhooks.MaxInFlightPerAccount, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := defaultDelivery
			opts.timeout = time.Minute
			b := setupDelivery(t, opts)
			release := make(chan struct{})
			hungURL, hung := newReceiver(t, func(_ http.ResponseWriter, r *http.Request) {
				select {
				case <-release:
				case <-r.Context().Done():
				}
			})
			t.Cleanup(func() { close(release) }) // before the receiver closes: it waits for its requests
			for range tt.endpoints {
				createEndpoint(t, b.client, hungURL, "payment.succeeded")
			}
			for range tt.payments {
				createPayment(t, b.client, 100)
			}
			for range tt.inFlight {
				next(t, hung, 5*time.Second)
			}
			// Let the workers go through the backlog first, so the next event queues behind it.
			waitBacklogFetched(t, b, 3*time.Second)

			other := b.client
			if tt.otherAccount {
				other = b.other
			}
			fastURL, fast := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
			createEndpoint(t, other, fastURL, "payment.succeeded")
			createPayment(t, other, 100)
			committed := time.Now()
			h := next(t, fast, 2*time.Second)
			t.Logf("the other endpoint's webhook arrived %s after its payment", h.at.Sub(committed))
			if n := len(hung); n != 0 {
				t.Fatalf("the hung receiver got %d attempts beyond the %d in flight", n, tt.inFlight)
			}
		})
	}
}

// waitBacklogFetched waits, for at most within, until every webhook job has been fetched at
// least once. Without a per-endpoint cap that never happens (every worker hangs on one
// endpoint), and the test goes on to fail on the delay it measures.
func waitBacklogFetched(t *testing.T, b *testBundle, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if b.count(t, `SELECT count(*) FROM river_job WHERE queue = 'webhooks' AND attempted_at IS NULL`) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("webhook jobs never fetched after %s: %d", within,
		b.count(t, `SELECT count(*) FROM river_job WHERE queue = 'webhooks' AND attempted_at IS NULL`))
}

// TestTwoProcessesDeliverEachEventOnce: two processes' workers on one database send each
// event to each endpoint once (at-least-once is the promise; once is the normal case). The
// receiver holds every request until more are in flight at once than one process ever sends
// to one endpoint (webhooks.MaxInFlightPerEndpoint), so both processes are delivering the
// same endpoint's events at the same moment before any is answered.
func TestTwoProcessesDeliverEachEventOnce(t *testing.T) {
	t.Parallel()
	b := setupDelivery(t, defaultDelivery)
	setupDelivery(t, defaultDelivery, withDatabase(b.dbURL)) // the second process

	const events = 30
	together := newOverlap(webhooks.MaxInFlightPerEndpoint+1, 5*time.Second)
	url, got := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		together.wait()
		w.WriteHeader(http.StatusOK)
	})
	e, _ := createEndpoint(t, b.client, url, "payment.succeeded")
	for range events {
		createPayment(t, b.client, 100)
	}
	waitDelivered(t, b, e.ID, events)
	if !together.reached() {
		t.Fatalf("never %d requests in flight at once: the two processes did not deliver together", together.n)
	}
	time.Sleep(time.Second) // room for a duplicate to show up
	seen := map[string]int{}
	for len(got) > 0 {
		seen[(<-got).header.Get(webhooks.HeaderID)]++
	}
	if len(seen) != events {
		t.Fatalf("%d webhook-ids received, want %d", len(seen), events)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s received %d times", id, n)
		}
	}
	if n := b.count(t, `SELECT count(DISTINCT w) FROM river_job, unnest(attempted_by) w WHERE queue = 'webhooks'`); n != 2 {
		t.Errorf("the webhook jobs were worked by %d processes, want 2", n)
	}
}

// overlap holds each caller of wait until n callers are waiting at once, or until its
// deadline; from the moment n were, it holds no one.
type overlap struct {
	n        int
	deadline time.Time
	mu       sync.Mutex
	waiting  int
	open     chan struct{}
}

func newOverlap(n int, patience time.Duration) *overlap {
	return &overlap{n: n, deadline: time.Now().Add(patience), open: make(chan struct{})}
}

func (o *overlap) wait() {
	o.mu.Lock()
	o.waiting++
	if o.waiting == o.n && !o.reached() { // under mu: one caller closes it
		close(o.open)
	}
	o.mu.Unlock()
	select {
	case <-o.open:
	case <-time.After(time.Until(o.deadline)):
	}
	o.mu.Lock()
	o.waiting--
	o.mu.Unlock()
}

// reached reports whether n callers were ever waiting at once.
func (o *overlap) reached() bool {
	select {
	case <-o.open:
		return true
	default:
		return false
	}
}

// TestAnEndpointDeletedDuringAChargeLosesNoPayment: a create reads the endpoints its event
// fans out to ahead, with its first statement, and writes their deliveries at its commit,
// after the charge. An endpoint deleted while the charge is held gets no delivery, and the
// payment commits: the deleted endpoint's foreign key would otherwise fail the whole
// transaction, a 500 for a charge that went through.
func TestAnEndpointDeletedDuringAChargeLosesNoPayment(t *testing.T) {
	t.Parallel()
	gate := newGatedProcessor()
	b := setup(t, withPrivateReceivers(), withProcessor(gate))
	t.Cleanup(gate.open) // before the servers close: Close waits for the held request
	deleted, _ := createEndpoint(t, b.client, "http://127.0.0.1:3000/deleted", "payment.succeeded")
	kept, _ := createEndpoint(t, b.client, "http://127.0.0.1:3000/kept", "payment.succeeded")

	created := make(chan *apitest.Response, 1)
	go func() { created <- b.client.Post("/payments", visa(900), apitest.Header("Idempotency-Key", newKey())) }()
	gate.waitCharging(t) // the create has read both endpoints and is charging
	if res := b.client.Do(http.MethodDelete, "/webhook-endpoints/"+deleted.ID, nil); res.Status != http.StatusNoContent {
		t.Fatalf("delete during the charge: %d %s", res.Status, res.Body)
	}
	gate.open()
	if res := <-created; res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s, want 201", res.Status, res.Body)
	}
	if n := b.count(t, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, kept.ID); n != 1 {
		t.Errorf("%d deliveries to the endpoint kept, want 1", n)
	}
	if n := b.count(t, `SELECT count(*) FROM webhook_deliveries`); n != 1 {
		t.Errorf("%d deliveries in all, want only the kept endpoint's", n)
	}
}

// TestAnEndpointDeletedAsAChargeCommitsLosesNoPayment: the endpoint's deletion has begun but
// not committed when the create writes its deliveries. The create's read of the endpoints
// it fans out to (FOR KEY SHARE) waits for the deletion to end, and then leaves the deleted
// endpoint out; a read that did not wait would see it, and its delivery's foreign key would
// fail the transaction after the charge.
func TestAnEndpointDeletedAsAChargeCommitsLosesNoPayment(t *testing.T) {
	t.Parallel()
	gate := newGatedProcessor()
	b := setup(t, withPrivateReceivers(), withProcessor(gate))
	t.Cleanup(gate.open)
	deleted, _ := createEndpoint(t, b.client, "http://127.0.0.1:3000/deleted", "payment.succeeded")
	kept, _ := createEndpoint(t, b.client, "http://127.0.0.1:3000/kept", "payment.succeeded")
	created := make(chan *apitest.Response, 1)
	go func() { created <- b.client.Post("/payments", visa(900), apitest.Header("Idempotency-Key", newKey())) }()
	gate.waitCharging(t)

	conn, err := pgx.Connect(t.Context(), b.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) }) // a failed test must not hold the row
	if _, err := tx.Exec(t.Context(), `DELETE FROM webhook_endpoints WHERE id = $1`, deleted.ID); err != nil {
		t.Fatal(err)
	}
	gate.open()
	b.waitUntilBlocked(t, 1) // the create waits on the deleted endpoint's row
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if res := <-created; res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s, want 201", res.Status, res.Body)
	}
	if n := b.count(t, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, kept.ID); n != 1 {
		t.Errorf("%d deliveries to the endpoint kept, want 1", n)
	}
}
