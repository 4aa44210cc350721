package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/internal/testing/integration"
)

// TestFrozenDatabaseAnswers503WithinTheDeadline freezes the database (it accepts and never
// answers, like a PostgreSQL stopped with SIGSTOP): reads and writes answer 503 with
// Retry-After once REQUEST_TIMEOUT has passed, instead of holding the client for as long as
// the freeze lasts; when the database thaws, the server serves again by itself.
func TestFrozenDatabaseAnswers503WithinTheDeadline(t *testing.T) {
	t.Parallel()
	const requestTimeout = time.Second
	proxy, url := dbtest.NewProxy(t, dbtest.NewURL(t))
	r := startServe(t, map[string]string{"DATABASE_URL": url, "REQUEST_TIMEOUT": requestTimeout.String(), "WRITE_TIMEOUT": "5s"}, true)

	proxy.Freeze()
	for _, req := range []struct{ method, path, body string }{
		{http.MethodGet, "/account", ""},
		{http.MethodPost, "/payments", `{"amount":100,"currency":"usd","payment_method":"pm_card_visa"}`},
	} {
		start := time.Now()
		res := send(t, r, req.method, req.path, req.body, "frozen-1")
		took := time.Since(start)
		res.WantUnavailable(t, req.method+" "+req.path)
		if took < requestTimeout*9/10 || took > requestTimeout+2*time.Second {
			t.Errorf("%s %s answered after %s, want about REQUEST_TIMEOUT (%s)", req.method, req.path, took, requestTimeout)
		}
	}
	// The answer is the one the contract documents for the operation.
	if res := apitest.NewClient(t, r.base, testKey).Get("/account"); res.Status != http.StatusServiceUnavailable {
		t.Errorf("GET /account while frozen: %d", res.Status)
	}

	proxy.Resume()
	integration.WaitFor(t, func() bool { return send(t, r, http.MethodGet, "/account", "", "").Status == http.StatusOK })
}

// TestStoppedDatabaseAnswers503AndRecovers stops the database (connections dropped and
// refused): with no failover wait, every authenticated operation answers 503 with
// Retry-After at once, not 500, readiness fails, liveness does not; when the database is
// back the server recovers without a restart, and a retried payment goes through.
func TestStoppedDatabaseAnswers503AndRecovers(t *testing.T) {
	t.Parallel()
	proxy, url := dbtest.NewProxy(t, dbtest.NewURL(t))
	// With the API-key cache on, GET /account is answered from memory for a key looked up in
	// the last seconds, database or not; off, every operation here needs the database.
	r := startServe(t, map[string]string{"DATABASE_URL": url, "API_KEY_CACHE_TTL": "0s", "DATABASE_FAILOVER_WAIT": "0s"}, true)
	client := apitest.NewClient(t, r.base, testKey)
	payment := map[string]any{"amount": 100, "currency": "usd", "payment_method": "pm_card_visa"}
	var created struct{ ID string }
	client.Post("/payments", payment, apitest.Header("Idempotency-Key", "before-outage")).Decode(t, &created)

	proxy.Refuse()
	for _, res := range []*apitest.Response{
		client.Get("/account"),
		client.Get("/payments"),
		client.Get("/payments/" + created.ID),
		client.Patch("/payments/"+created.ID, map[string]any{"description": "x"}, apitest.Header("If-Match", `"v1"`)),
		client.Post("/payments", payment, apitest.Header("Idempotency-Key", "during-outage")),
		client.Post("/refunds", map[string]any{"payment_id": created.ID}, apitest.Header("Idempotency-Key", "during-outage")),
		client.Get("/refunds"),
		client.Get("/refunds/re_none"),
		client.Get("/readyz"),
	} {
		res.WantUnavailable(t, "while stopped")
	}
	if res := client.Get("/healthz"); res.Status != http.StatusOK {
		t.Errorf("liveness while the database is stopped: %d", res.Status)
	}
	if r.logged(`"level":"ERROR"`) {
		t.Errorf("an outage is not an internal error, yet ERROR was logged:\n%s", r.logs.String())
	}

	proxy.Resume()
	integration.WaitFor(t, func() bool { return r.status("/readyz") == http.StatusOK })
	res := client.Post("/payments", payment, apitest.Header("Idempotency-Key", "during-outage"))
	if res.Status != http.StatusCreated {
		t.Errorf("the retried payment after recovery: %d %s", res.Status, res.Body)
	}
}

// TestStoppedDatabaseWithinTheFailoverWait stops the database for less than
// DATABASE_FAILOVER_WAIT, as a failover does: requests that arrive meanwhile wait for it
// instead of answering 503 (a payment, a read of it, the key's lookup), and are answered
// once it is back. The payment is created once: its retry with the key replays it.
func TestStoppedDatabaseWithinTheFailoverWait(t *testing.T) {
	t.Parallel()
	proxy, url := dbtest.NewProxy(t, dbtest.NewURL(t))
	r := startServe(t, map[string]string{"DATABASE_URL": url, "API_KEY_CACHE_TTL": "0s", "DATABASE_FAILOVER_WAIT": "20s"}, true)
	payment := `{"amount":100,"currency":"usd","payment_method":"pm_card_visa"}`
	var before struct{ ID string }
	send(t, r, http.MethodPost, "/payments", payment, "before-outage").Decode(t, &before)

	proxy.Refuse()
	created, read := make(chan *apitest.Response, 1), make(chan *apitest.Response, 1)
	go func() { created <- send(t, r, http.MethodPost, "/payments", payment, "during-outage") }()
	go func() { read <- send(t, r, http.MethodGet, "/payments/"+before.ID, "", "") }()
	proxy.WaitRefused(6) // both requests have tried, and tried again
	proxy.Resume()

	if res := <-created; res.Status != http.StatusCreated {
		t.Errorf("a payment sent while the database was away: %d %s, want 201 once it is back", res.Status, res.Body)
	}
	if res := <-read; res.Status != http.StatusOK {
		t.Errorf("a read sent while the database was away: %d %s, want 200 once it is back", res.Status, res.Body)
	}
	if res := send(t, r, http.MethodPost, "/payments", payment, "during-outage"); res.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the payment's retry: %d, Idempotent-Replayed %q, want a replay of the one created", res.Status, res.Header.Get("Idempotent-Replayed"))
	}
}

// send makes one request with the harness key (and an Idempotency-Key when key is set),
// through a client with a timeout (apitest.RequestTimeout), for the tests that time the answer.
func send(t *testing.T, r *running, method, path, body, key string) *apitest.Response {
	t.Helper()
	var opts []apitest.Option
	if key != "" {
		opts = append(opts, apitest.Header("Idempotency-Key", key))
	}
	var b any // nil: no body
	if body != "" {
		b = body
	}
	return apitest.NewClient(t, r.base, testKey).Do(method, path, b, opts...)
}

// TestShutdownWithAFrozenDatabaseEndsSoonAfterItsTimeout freezes the database, then stops
// the server: the workers cannot give up River's leadership (a statement nobody answers), and
// each pooled connection waits for a goodbye that never comes. Neither may hold the exit far
// beyond SHUTDOWN_TIMEOUT: the canceled jobs get a second more, the pool's close another.
func TestShutdownWithAFrozenDatabaseEndsSoonAfterItsTimeout(t *testing.T) {
	t.Parallel()
	const shutdownTimeout = time.Second
	proxy, url := dbtest.NewProxy(t, dbtest.NewURL(t))
	r := startServe(t, map[string]string{"DATABASE_URL": url, "SHUTDOWN_TIMEOUT": shutdownTimeout.String()}, true)
	if res := send(t, r, http.MethodGet, "/payments", "", ""); res.Status != http.StatusOK {
		t.Fatalf("before the freeze: %d %s", res.Status, res.Body)
	}

	proxy.Freeze()
	start := time.Now()
	r.stop() // SIGTERM
	_ = r.wait(t)
	took := time.Since(start)
	t.Logf("returned %s after SIGTERM", took.Round(time.Millisecond))
	if took > shutdownTimeout+4*time.Second {
		t.Errorf("the server returned %s after SIGTERM with SHUTDOWN_TIMEOUT %s and the database frozen", took.Round(time.Millisecond), shutdownTimeout)
	}
}
