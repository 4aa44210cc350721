package dbtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// SeqScans is how many sequential scans of each table PostgreSQL has counted, in the order
// given. The pool's own counts are flushed first, so with a pool of one connection the
// figures include every statement that connection ran: a test compares them before and
// after the work it checks.
func SeqScans(t testing.TB, ctx context.Context, pool *pgxpool.Pool, tables ...string) []int64 {
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
