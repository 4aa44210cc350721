package main

import (
	"context"
	"net/http"
	"testing"

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
	// The payment's transaction holds the key's advisory lock while it charges. Only this
	// test's database counts: tests of other packages take such locks on the same server.
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	integration.WaitFor(t, func() bool {
		var n int
		_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory'
			  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n)
		return n > 0
	})

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
