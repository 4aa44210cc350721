package idempotency_test

import (
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// TestSweepReadsOnlyExpiredKeys: a sweep that first ran while the table was empty must not
// read the live keys once there are many. The server's connections plan a statement once
// (db.Open), and the sweep's DELETE, planned then, kept a hash join over the whole table;
// planned for each run (db.PlannedPerRun) and taking the oldest expired keys first, it
// reaches them through their index. On one connection, so the first sweep's plan is the one
// a planned-once statement would keep, the table is never analysed, and PostgreSQL counts
// the sequential scans of the table during the second sweep: there must be none.
func TestSweepReadsOnlyExpiredKeys(t *testing.T) {
	t.Parallel()
	ctx := bounded(t)
	pool := dbtest.NewPlanningPool(t, ctx, "idempotency_keys")
	accountID := seedAccount(t, pool)
	store := idempotency.NewStore(pool, time.Hour)
	if _, err := store.Sweep(ctx); err != nil { // planned on the empty table
		t.Fatal(err)
	}
	const live, expired = 200_000, 600 // more expired keys than one batch
	if _, err := pool.Exec(ctx, `
		INSERT INTO idempotency_keys (account_id, operation, key, fingerprint, response_status, expires_at)
		SELECT $1, 'payments.create', 'key-' || g, '\x00', 201,
		       now() + CASE WHEN g <= $2 THEN interval '-1 minute' ELSE interval '1 day' END
		FROM generate_series(1, $3::int) g`, accountID, expired, live+expired); err != nil {
		t.Fatal(err)
	}

	dbtest.NoSeqScans(t, ctx, pool, []string{"idempotency_keys"}, func() {
		n, err := store.Sweep(ctx)
		if err != nil || n != expired {
			t.Fatalf("swept %d keys (%v), want %d", n, err, expired)
		}
	})
}
