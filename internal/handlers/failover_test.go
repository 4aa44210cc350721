package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// What a request in flight meets while PostgreSQL fails over, each caused on one real
// server: the answer is 503 with Retry-After (never a 500, never a 201 that did not
// commit), and the client's retry with the same key charges exactly once. A connection cut
// mid-transaction is the process-level tests' (internal/testing/integration:
// TestDatabaseResetPeer, TestLostCommitAnswer).

// adminConn is the test's own session on b's database, opened before any fault, so it keeps
// writing while the server's sessions cannot.
func (b *testBundle) adminConn(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, b.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// setReadOnly makes every new session of the database read-only, or writable again: what
// the server sees of a node a failover demoted to a standby, and of the new primary.
func setReadOnly(t *testing.T, admin *pgx.Conn, on bool) {
	t.Helper()
	db := pgx.Identifier{admin.Config().Database}.Sanitize()
	sql := "ALTER DATABASE " + db + " RESET default_transaction_read_only"
	if on {
		sql = "ALTER DATABASE " + db + " SET default_transaction_read_only = on"
	}
	if _, err := admin.Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
}

// checkRetryCreatesOnce sends the failed request again with its key and fails the test
// unless it is created anew (the failed attempt committed nothing to replay) and query,
// a count, finds exactly one row: the client was charged once.
func (b *testBundle) checkRetryCreatesOnce(t *testing.T, path string, body any, key, query string, args ...any) {
	t.Helper()
	res := b.client.Post(path, body, apitest.Header("Idempotency-Key", key))
	if res.Status != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the retry of POST %s: %d %s, want a new 201", path, res.Status, res.Body)
	}
	if n := b.count(t, query, args...); n != 1 {
		t.Errorf("%s after the retry: %d, want 1", query, n)
	}
}

// TestDemotedPrimaryAnswers503: the node the pool is connected to turns read-only (25006).
// The payment answers 503; once the new primary serves, the retry with the same key
// creates it, without the test closing any connection: the pool dropped the read-only ones
// itself.
func TestDemotedPrimaryAnswers503(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.adminConn(t)
	key := newKey()

	setReadOnly(t, admin, true)
	b.pool.Reset() // the pool's next sessions are the demoted node's
	b.client.Post("/payments", visa(1500), apitest.Header("Idempotency-Key", key)).WantUnavailable(t, "a write on a read-only node")
	if !strings.Contains(b.logs.String(), "SQLSTATE 25006") {
		t.Errorf("the 503 did not come from a read-only answer:\n%s", b.logs.String())
	}

	setReadOnly(t, admin, false)
	b.checkRetryCreatesOnce(t, "/payments", visa(1500), key, `SELECT count(*) FROM payments`)
}

// TestTerminatedBackendAnswers503: the backend running a refund's transaction is
// terminated (57P01, as a fast shutdown or pg_terminate_backend does) while it waits for
// the payment's row lock, which the test holds. The refund answers 503; its retry with the
// same key refunds once.
func TestTerminatedBackendAnswers503(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pay, _ := createPayment(t, b.client, 2000)
	key := newKey()
	refund := refundOf(pay.ID, 500)

	release := b.lockPayment(t, pay.ID)
	answer := make(chan *apitest.Response, 1)
	go func() { answer <- b.client.Post("/refunds", refund, apitest.Header("Idempotency-Key", key)) }()
	b.waitUntilBlocked(t, 1) // the refund is inside its transaction
	// Waiting (up to 5 s) until the backend has exited, and so released the key it claimed,
	// stands for the client waiting Retry-After before it retries.
	var terminated bool
	err := b.pool.QueryRow(context.Background(), `SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&terminated)
	release()
	if err != nil || !terminated {
		t.Fatalf("terminate the refund's backend: %t, %v", terminated, err)
	}
	(<-answer).WantUnavailable(t, "a refund whose backend was terminated")
	if !strings.Contains(b.logs.String(), "SQLSTATE 57P01") {
		t.Errorf("the 503 did not come from a terminated backend:\n%s", b.logs.String())
	}

	b.checkRetryCreatesOnce(t, "/refunds", refund, key, `SELECT count(*) FROM refunds WHERE payment_id = $1`, pay.ID)
}

// TestJobsResumeAfterDemotion: the job workers share the pool with requests. While the
// database is read-only their fetches fail as the requests' writes do, and a report
// requested then answers 503. Once the primary serves, the retry with the same key is
// accepted and its job runs, with nothing restarted.
func TestJobsResumeAfterDemotion(t *testing.T) {
	t.Parallel()
	b := setup(t, withConfig(func(c *app.Config) { c.Work = true }))
	admin := b.adminConn(t)
	key := newKey()
	report := reportBody("payments", "csv")

	setReadOnly(t, admin, true)
	b.pool.Reset()
	b.client.Post("/reports", report, apitest.Header("Idempotency-Key", key)).WantUnavailable(t, "a report requested on a read-only node")
	waitUntil(t, func() bool { // the workers met the read-only node too: a 25006 outside any request
		for line := range strings.Lines(b.logs.String()) {
			if strings.Contains(line, "SQLSTATE 25006") && !strings.Contains(line, `"request_id"`) {
				return true
			}
		}
		return false
	})

	setReadOnly(t, admin, false)
	var res *apitest.Response
	waitUntil(t, func() bool {
		// Connections opened while the node was read-only are dropped as they meet it.
		res = b.client.Post("/reports", report, apitest.Header("Idempotency-Key", key))
		return res.Status != http.StatusServiceUnavailable
	})
	if res.Status != http.StatusAccepted || res.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the retry once the primary serves: %d %s, want a new 202", res.Status, res.Body)
	}
	var accepted job
	res.Decode(t, &accepted)
	waitForJob(t, b.client, accepted.ID, "succeeded")
	if n := b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'report.build'`); n != 1 {
		t.Errorf("%d report jobs, want 1", n)
	}
}
