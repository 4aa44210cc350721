package handlers_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// fireBehindPaymentLock is how a concurrency claim about one payment is put to the test,
// without hoping that goroutines collide: the test takes the payment's row lock itself, starts
// n requests, waits until PostgreSQL shows all n waiting for a lock (so every one of them is
// inside its transaction at the same time), and only then lets them go. It returns the
// responses in order.
func (b *testBundle) fireBehindPaymentLock(t *testing.T, paymentID string, n int, send func(i int) *apitest.Response) []*apitest.Response {
	t.Helper()
	release := b.lockPayment(t, paymentID)
	responses := make([]*apitest.Response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { responses[i] = send(i) })
	}
	b.waitUntilBlocked(t, n)
	release()
	wg.Wait()
	return responses
}

// lockPayment holds the payment's row lock in a transaction on a connection of the test's
// own (not the server's pool) until release is called or the test ends.
func (b *testBundle) lockPayment(t *testing.T, paymentID string) (release func()) {
	t.Helper()
	return b.holdLocks(t, `SELECT 1 FROM payments WHERE id = $1 FOR UPDATE`, paymentID)
}

// holdLocks runs query, a SELECT ... FOR UPDATE, in a transaction on a connection of the
// test's own and holds the row locks it takes until release is called or the test ends.
func (b *testBundle) holdLocks(t *testing.T, query string, args ...any) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, b.dbURL)
	if err != nil {
		t.Fatalf("connect to hold the row lock: %v", err)
	}
	tx, err := conn.Begin(ctx)
	if err == nil {
		_, err = tx.Exec(ctx, query, args...)
	}
	if err != nil {
		_ = conn.Close(ctx)
		t.Fatalf("%s %v: %v", query, args, err)
	}
	release = sync.OnceFunc(func() {
		if err := tx.Commit(ctx); err != nil {
			t.Errorf("release the row lock: %v", err)
		}
		_ = conn.Close(ctx)
	})
	t.Cleanup(release) // a failing test must not leave requests blocked
	return release
}

// waitUntil waits until done says yes, asked with the number of backends of the test's
// database waiting for a lock. It fails the test (without stopping it, so the caller still
// releases and collects its requests) when that has not happened within 10 s.
func (b *testBundle) waitUntil(t *testing.T, what string, done func(blocked int) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		blocked, err := b.blocked()
		if err != nil {
			t.Errorf("count blocked backends: %v", err)
			return
		}
		if done(blocked) {
			return
		}
	}
	t.Errorf("not within 10s: %s", what)
}

// waitUntilBlocked waits until n backends of the test's database are waiting for a lock.
func (b *testBundle) waitUntilBlocked(t *testing.T, n int) {
	t.Helper()
	b.waitUntil(t, fmt.Sprintf("%d requests waiting for a lock", n), func(blocked int) bool { return blocked >= n })
}

// waitUntilStatementBlocked waits until a backend of the test's database whose statement
// contains text waits for a lock: for a test whose server also runs jobs of its own (a sweep
// may wait on the same lock), the one statement it means.
func (b *testBundle) waitUntilStatementBlocked(t *testing.T, text string) {
	t.Helper()
	b.waitUntil(t, fmt.Sprintf("a statement with %q waiting for a lock", text), func(int) bool {
		return b.count(t, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND strpos(query, $1) > 0`, text) > 0
	})
}

// blocked counts the backends of the test's database that wait for a lock.
func (b *testBundle) blocked() (int, error) {
	// Asked on a connection outside any transaction: inside one, PostgreSQL would answer
	// from the snapshot of pg_stat_activity it took at the first read.
	var n int
	err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
	return n, err
}
