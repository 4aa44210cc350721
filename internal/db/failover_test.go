package db_test

import (
	"context"
	"testing"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// TestPoolDropsAReadOnlyNode: once a write meets a read-only server (a node demoted by a
// failover), neither its connection nor the idle ones beside it are handed out again; the
// next connection is a new one, which may write.
func TestPoolDropsAReadOnlyNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := db.Open(ctx, dbtest.NewURL(t), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	idle, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	demoted, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	idle.Release()
	// What a demoted node answers every write with, on this connection only.
	if _, err := demoted.Exec(ctx, "SET default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	_, err = demoted.Exec(ctx, "CREATE TEMP TABLE written (id int)")
	if !db.IsUnavailable(err) {
		t.Fatalf("a write on a read-only node: %v, want an unavailable error", err)
	}
	demoted.Release()

	if n := pool.Stat().TotalConns(); n != 0 {
		t.Errorf("%d connections kept after a read-only answer, want 0", n)
	}
	if _, err := pool.Exec(ctx, "CREATE TEMP TABLE written (id int)"); err != nil {
		t.Errorf("a write on the next connection: %v", err)
	}
}
