package reports

import (
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/riverqueue/river"
)

// TestAStepOfAFinishedJobWritesNothing: every transaction of a build begins by reading its
// job, locked. A run that finds the job finished (a second run of one job: a duplicate
// delivery, the rescue of a worker that was only slow) stops there and writes nothing,
// though the rows in the job's range would fill a page.
func TestAStepOfAFinishedJobWritesNothing(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.NewPool(t)
	ctx := t.Context()
	const accountID = "acct_step"
	for _, sql := range []string{
		`INSERT INTO accounts (id) VALUES ('acct_step')`,
		`INSERT INTO payments (id, account_id, amount, currency, status, payment_method, created_at, updated_at)
		 SELECT 'pay_step' || g, 'acct_step', 100, 'usd', 'succeeded', 'pm_card_visa', '2025-01-15', '2025-01-15'
		 FROM generate_series(1, 3) g`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	expires := time.Now().Add(time.Hour)
	jobID := insertJob(t, pool, accountID, &expires, 0) // succeeded, its range holding the payments

	w := NewWorker(pool, nil, DefaultRetention, 2) // a page short of the rows: not the last
	done, err := w.step(ctx, &river.Job[BuildArgs]{Args: BuildArgs{AccountID: accountID, JobID: jobID}})
	if err != nil || !done {
		t.Fatalf("step of a finished job = %t, %v; want done", done, err)
	}
	var chunks int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM report_chunks WHERE job_id = $1`, jobID).Scan(&chunks); err != nil {
		t.Fatal(err)
	}
	if chunks != 0 {
		t.Errorf("a step of a finished job wrote %d chunks, want none", chunks)
	}
}
