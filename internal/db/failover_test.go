package db_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// TestPoolDropsAReadOnlyNode: once a write meets a read-only server (a node demoted by a
// failover), whether sent as it is called (in BEGIN's batch, or on its own as River's and a
// transaction's later statements are) or queued for the commit, InTx fails as
// unavailable, and the pool keeps none of the connections it had: not the one that met the
// read-only answer, nor the idle one beside it, nor one in use at the time. The next
// connection is a new one, which may write.
func TestPoolDropsAReadOnlyNode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		write func(context.Context, db.Tx) error
	}{
		{"a statement", func(ctx context.Context, tx db.Tx) error { return tx.AccountCreateIfMissing(ctx, "acct_now") }},
		{"a write queued for the commit", func(ctx context.Context, tx db.Tx) error { return tx.Later.AccountCreateIfMissing(ctx, "acct_later") }},
		{"a statement after BEGIN, on its own", func(ctx context.Context, tx db.Tx) error {
			if _, err := tx.PgxTx(ctx); err != nil { // BEGIN alone: the write is not a batch's
				return err
			}
			return tx.AccountCreateIfMissing(ctx, "acct_alone")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool, err := db.Open(ctx, dbtest.NewURL(t), db.Options{MaxConns: 3})
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			idleReadOnly(t, pool, 2)
			inUse, err := pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}

			err = db.InTx(ctx, pool, func(tx db.Tx) error { return tc.write(ctx, tx) })
			inUse.Release()
			if !db.IsUnavailable(err) {
				t.Fatalf("a write on a read-only node: %v, want an unavailable error", err)
			}
			if n := pool.Stat().TotalConns(); n != 0 {
				t.Errorf("%d connections kept after a read-only answer, want 0", n)
			}
			if err := db.InTx(ctx, pool, func(tx db.Tx) error { return tc.write(ctx, tx) }); err != nil {
				t.Errorf("a write on the next connection: %v", err)
			}
		})
	}
}

// idleReadOnly leaves n idle connections in pool, each read-only: what the connections to a
// demoted node answer every write with.
func idleReadOnly(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	ctx := context.Background()
	for range n {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release() // held until all n are open, so that each is a new one
		if _, err := conn.Exec(ctx, "SET default_transaction_read_only = on"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAFrozenServerIsGivenUpOn: a server that accepts the connection and never answers
// fails Open after the default connect timeout (5 s), rather than hold the caller until its
// own deadline, which a process starting up may not have.
func TestAFrozenServerIsGivenUpOn(t *testing.T) {
	t.Parallel()
	proxy, url := dbtest.NewProxy(t, dbtest.NewURL(t))
	proxy.Freeze()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := db.Open(ctx, url, db.Options{})
	if err == nil {
		pool.Close()
		t.Fatal("Open succeeded on a frozen server")
	}
	if ctx.Err() != nil {
		t.Fatalf("Open waited out the caller's minute: %v, want the connect timeout's error first", err)
	}
}

// TestAnIdleConnectionToAFrozenServerIsGivenUpOn: the pool pings a connection that sat idle
// before lending it, and gives up on a ping the server does not answer within the ping
// timeout (1 s), rather than hold the request that drew it until its own deadline.
func TestAnIdleConnectionToAFrozenServerIsGivenUpOn(t *testing.T) {
	t.Parallel()
	// Room for a second connection: pgxpool closes the one it gave up on in the background,
	// for up to 15 s, and only then frees its place. The second, which the pool opens once it
	// has given up on the first, meets the frozen server too: a connect timeout of 1 s.
	proxy, url := dbtest.NewProxy(t, dbtest.NewURL(t)+"&connect_timeout=1")
	pool, err := db.Open(context.Background(), url, db.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(context.Background()); err != nil { // the pool's one connection, idle
		t.Fatal(err)
	}
	proxy.Freeze()
	// Thawed when the test ends, so the pool's closing of the connection it gave up on ends too.
	defer proxy.Resume()
	time.Sleep(1100 * time.Millisecond) // idle for over a second: pgxpool pings it before lending it
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pool.Acquire(ctx)
	if err == nil {
		conn.Release()
		t.Fatal("a connection was lent from a frozen server")
	}
	if ctx.Err() != nil {
		t.Fatalf("Acquire waited out the caller's minute: %v, want the ping's and then the connect timeout's error first", err)
	}
}

// poolBehindProxy opens a one-connection pool on databaseURL's database through a
// dbtest.Proxy, for a test to take the database away from it.
func poolBehindProxy(t *testing.T, databaseURL string) (*dbtest.Proxy, *pgxpool.Pool) {
	t.Helper()
	proxy, url := dbtest.NewProxy(t, databaseURL)
	pool, err := db.Open(context.Background(), url, db.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return proxy, pool
}

// TestTransactionWaitsOutAFailover: with a failover wait, a transaction that cannot begin
// (its connection cut, each new one closed at once) keeps trying, and commits once the
// database is back; fn runs once, on the connection that began. Without a wait, or once
// the wait is spent, it fails as unavailable, having committed nothing.
func TestTransactionWaitsOutAFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct := dbtest.NewURL(t)
	proxy, pool := poolBehindProxy(t, direct)
	calls := 0
	create := func(id string) func(tx db.Tx) error {
		return func(tx db.Tx) error {
			calls++
			return tx.AccountCreateIfMissing(ctx, id)
		}
	}
	// cutIdle leaves the pool one idle connection, then has the proxy refuse: the
	// connection is cut, so the next BEGIN on it fails, and every new one is refused.
	cutIdle := func() {
		t.Helper()
		proxy.Resume()
		if err := db.InTx(ctx, pool, func(tx db.Tx) error { _, err := tx.PgxTx(ctx); return err }); err != nil {
			t.Fatal(err)
		}
		proxy.Refuse()
	}

	cutIdle()
	if err := db.InTx(ctx, pool, create("acct_nowait")); !db.IsUnavailable(err) {
		t.Fatalf("without a failover wait: %v, want an unavailable error", err)
	}
	cutIdle()
	if err := db.InTx(db.WithFailoverWait(ctx, 300*time.Millisecond), pool, create("acct_spent")); !db.IsUnavailable(err) {
		t.Fatalf("once the wait is spent: %v, want an unavailable error", err)
	}

	cutIdle()
	calls = 0
	done := make(chan error, 1)
	go func() { done <- db.InTx(db.WithFailoverWait(ctx, time.Minute), pool, create("acct_waited")) }()
	proxy.WaitRefused(3) // BEGIN failed, and new connections were tried again and again
	select {
	case err := <-done:
		t.Fatalf("the transaction ended while the database was away: %v", err)
	default:
	}
	proxy.Resume()
	if err := <-done; err != nil {
		t.Fatalf("once the database is back: %v, want the transaction committed", err)
	}
	if calls != 1 {
		t.Errorf("fn ran %d times, want once: the transaction is begun again before fn sees anything", calls)
	}

	// A transaction whose first action is PgxTx (River's insert) sends BEGIN alone, and
	// waits the failover out the same way.
	cutIdle()
	go func() {
		done <- db.InTx(db.WithFailoverWait(ctx, time.Minute), pool, func(tx db.Tx) error {
			if _, err := tx.PgxTx(ctx); err != nil {
				return err
			}
			return tx.AccountCreateIfMissing(ctx, "acct_begun")
		})
	}()
	proxy.WaitRefused(3)
	proxy.Resume()
	if err := <-done; err != nil {
		t.Fatalf("BEGIN alone, once the database is back: %v, want the transaction committed", err)
	}

	check, err := pgx.Connect(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close(ctx)
	rows, _ := check.Query(ctx, `SELECT id FROM accounts WHERE id LIKE 'acct\_%' ORDER BY id`)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"acct_begun", "acct_waited"}) {
		t.Errorf("accounts %v: want acct_begun and acct_waited alone", ids)
	}
}

// TestTransactionCutAfterBeginIsNotRetried: once BEGIN has answered, fn has acted on what
// the transaction read, so a connection cut later fails the transaction as unavailable,
// failover wait or not: the request answers 503 and its client retries with its key.
func TestTransactionCutAfterBeginIsNotRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy, pool := poolBehindProxy(t, dbtest.NewURL(t))
	calls := 0
	err := db.InTx(db.WithFailoverWait(ctx, time.Minute), pool, func(tx db.Tx) error {
		calls++
		if err := tx.AccountCreateIfMissing(ctx, "acct_first"); err != nil {
			return err
		}
		proxy.Refuse()
		defer proxy.Resume()
		return tx.AccountCreateIfMissing(ctx, "acct_second")
	})
	if !db.IsUnavailable(err) || calls != 1 {
		t.Errorf("a connection cut mid-transaction: %v after %d runs of fn, want an unavailable error after one", err, calls)
	}
}

// TestReadWaitsOutAFailover: a read through Reads that meets an unavailable database is
// sent again until it is answered, within the failover wait; a write through Reads is
// refused before it is sent.
func TestReadWaitsOutAFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy, pool := poolBehindProxy(t, dbtest.NewURL(t))
	read := func(ctx context.Context) error {
		_, err := db.Reads(pool).AccountGetByAPIKeyHash(ctx, []byte("no such key"))
		return err
	}

	proxy.Refuse()
	if err := read(ctx); !db.IsUnavailable(err) {
		t.Fatalf("without a failover wait: %v, want an unavailable error", err)
	}
	proxy.Refuse() // counts the refusals from here on
	done := make(chan error, 1)
	go func() { done <- read(db.WithFailoverWait(ctx, time.Minute)) }()
	proxy.WaitRefused(3)
	proxy.Resume()
	if err := <-done; !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("once the database is back: %v, want the read answered (no rows)", err)
	}

	if err := db.Reads(pool).AccountCreateIfMissing(ctx, "acct_x"); err == nil {
		t.Error("a write through Reads was sent, want it refused")
	}
}
