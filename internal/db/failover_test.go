package db_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// TestPoolDropsAReadOnlyNode: once a write meets a read-only server (a node demoted by a
// failover), whether sent as it is called or queued for the commit, InTx fails as
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
