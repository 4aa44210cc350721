package dbtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
)

// NewPlanningPool creates a fresh migrated database for t and a pool of one connection on it,
// closed when t ends, for tests of what a statement's plan reads. The pool is db.Open's, so
// its connection plans a statement once and keeps the plan, as the server's do; with one
// connection, the plan a test's first run made is the one every later run finds. Autovacuum
// is off for tables, so nothing analyses them behind the test's back.
func NewPlanningPool(t testing.TB, ctx context.Context, tables ...string) *pgxpool.Pool {
	t.Helper()
	pool, err := db.Open(ctx, NewURL(t)+"&pool_max_conns=1", db.Options{})
	if err != nil {
		t.Fatalf("connect to test database: %v", err)
	}
	t.Cleanup(pool.Close)
	for _, table := range tables {
		if _, err := pool.Exec(ctx, `ALTER TABLE `+table+` SET (autovacuum_enabled = off)`); err != nil {
			t.Fatal(err)
		}
	}
	return pool
}

// NoSeqScans runs work and fails t for each table PostgreSQL counted a sequential scan of
// meanwhile: work must reach its rows through indexes, never by reading a whole table. The
// pool's counts are flushed before and after, so on a NewPlanningPool, whose one connection
// runs the work, they are the work's own.
func NoSeqScans(t testing.TB, ctx context.Context, pool *pgxpool.Pool, tables []string, work func()) {
	t.Helper()
	before := seqScans(t, ctx, pool, tables)
	work()
	after := seqScans(t, ctx, pool, tables)
	for i, table := range tables {
		if n := after[i] - before[i]; n != 0 {
			t.Errorf("scanned the whole of %s %d times", table, n)
		}
	}
}

func seqScans(t testing.TB, ctx context.Context, pool *pgxpool.Pool, tables []string) []int64 {
	t.Helper()
	if _, err := pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	counts := make([]int64, len(tables))
	for i, table := range tables {
		if err := pool.QueryRow(ctx, `SELECT seq_scan FROM pg_stat_user_tables WHERE relname = $1`, table).Scan(&counts[i]); err != nil {
			t.Fatalf("sequential scans of %s: %v", table, err)
		}
	}
	return counts
}
