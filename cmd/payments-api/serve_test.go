package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/internal/testing/integration"
)

// TestShutdownDrainsInFlightRequests runs the real serve loop, starts a payment whose charge
// takes 500 ms, and cancels the context (what SIGTERM does) while it is in flight: the
// payment still completes and commits, serve returns cleanly, and new connections are refused.
func TestShutdownDrainsInFlightRequests(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	r := startServe(t, map[string]string{"DATABASE_URL": url, "PROCESSOR_LATENCY": "500ms"}, true)
	base := r.base
	client := apitest.NewClient(t, base, testKey)
	inFlight := make(chan *apitest.Response, 1)
	go func() {
		inFlight <- client.Post("/payments", map[string]any{"amount": 100, "currency": "usd", "payment_method": "pm_card_visa"},
			apitest.Header("Idempotency-Key", "shutdown-1"))
	}()
	conn := waitForCharge(t, url)

	r.stop() // SIGTERM
	if res := <-inFlight; res.Status != http.StatusCreated {
		t.Errorf("in-flight request during shutdown: %d %s", res.Status, res.Body)
	}
	if err := r.wait(t); err != nil {
		t.Errorf("serve: %v", err)
	}
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM payments`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d payments committed (%v), want 1", n, err)
	}
	if _, err := integration.Get(context.Background(), base+"/healthz"); err == nil {
		t.Error("the server still accepts connections after shutdown")
	}
}

// waitForCharge waits until a payment of the database at url is charging, and returns a
// connection to that database, closed when t ends.
func waitForCharge(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	// The payment's transaction holds the key's advisory lock while it charges. Only this
	// test's database counts: tests of other packages take such locks on the same server.
	integration.WaitFor(t, func() bool {
		var n int
		_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory'
			  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n)
		return n > 0
	})
	return conn
}

// TestShutdownStopsWhatOutlastsItsTimeout: a request still running when SHUTDOWN_TIMEOUT is
// over is stopped, not waited for. Its transaction rolls back, its client is answered 503
// with Retry-After before the process exits, and the process exits soon after the timeout,
// not when the request would have ended.
func TestShutdownStopsWhatOutlastsItsTimeout(t *testing.T) {
	t.Parallel()
	const latency = 8 * time.Second // the charge's; under the test client's 10 s
	url := dbtest.NewURL(t)
	p := startProcess(t, url, map[string]string{
		"PROCESSOR_LATENCY": latency.String(), "SHUTDOWN_TIMEOUT": "1s", "REQUEST_TIMEOUT": "30s", "WRITE_TIMEOUT": "35s",
	})
	client := apitest.NewClient(t, p.Base, processKey)
	inFlight := make(chan *apitest.Response, 1)
	go func() {
		inFlight <- client.Post("/payments", map[string]any{"amount": 100, "currency": "usd", "payment_method": "pm_card_visa"},
			apitest.Header("Idempotency-Key", "shutdown-timeout"))
	}()
	conn := waitForCharge(t, url)

	stopped := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- p.Stop(latency) }() // SIGTERM
	res := <-inFlight
	if res.Status != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" ||
		!strings.Contains(res.Problem(t).Detail, "shut down") {
		t.Errorf("a request that outlasts the shutdown: %d (Retry-After %q) %s, want 503 with Retry-After, saying why",
			res.Status, res.Header.Get("Retry-After"), res.Body)
	}
	if err := <-exited; err == nil || !p.Logged("requests outlasted SHUTDOWN_TIMEOUT") {
		t.Errorf("exit: %v; want a failure, logged", err)
	}
	if took := time.Since(stopped); took > latency/2 {
		t.Errorf("the process exited %s after SIGTERM, with a 1s SHUTDOWN_TIMEOUT", took.Round(time.Millisecond))
	}
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM payments`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d payments committed (%v), want none", n, err)
	}
}
