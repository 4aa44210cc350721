package reports

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// insertJob inserts a report job of the account with its request and chunks chunks:
// finished, with its report, and expiring at expires, or still running when expires is nil.
func insertJob(t *testing.T, pool *pgxpool.Pool, accountID string, expires *time.Time, chunks int) string {
	t.Helper()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	id := domain.NewID("job")
	status, finished := "running", (*time.Time)(nil)
	if expires != nil {
		status, finished = "succeeded", new(expires.Add(-DefaultRetention))
	}
	exec(`INSERT INTO jobs (id, account_id, type, status, river_job_id, finished_at, expires_at) VALUES ($1, $2, 'report', $3, 0, $4, $5)`,
		id, accountID, status, finished, expires)
	exec(`INSERT INTO report_requests (account_id, job_id, type, format, created_gte, created_lt) VALUES ($2, $1, 'payments', 'csv', '2025-01-01', '2025-02-01')`, id, accountID)
	exec(`INSERT INTO report_chunks (account_id, job_id, seq, data) SELECT $3, $1, g, 'a chunk' FROM generate_series(0, $2::int - 1) g`, id, chunks, accountID)
	if expires != nil {
		exec(`INSERT INTO reports (id, account_id, job_id, type, format, created_gte, created_lt, row_count, byte_size, chunks)
			VALUES ($1, $2, $3, 'payments', 'csv', '2025-01-01', '2025-02-01', 0, 0, $4)`, domain.NewID("rpt"), accountID, id, chunks)
	}
	return id
}

// TestSweepDeletesExpiredJobsChunksFirstInBatches: expired jobs go with their chunks,
// requests and reports, and no statement deletes more than a batch of rows, though each job
// has more chunks than a batch holds; unexpired and unfinished jobs keep everything.
func TestSweepDeletesExpiredJobsChunksFirstInBatches(t *testing.T) {
	t.Parallel()
	pool, rec := dbtest.NewRecordedPool(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const accountID = "acct_sweep"
	if _, err := pool.Exec(ctx, `INSERT INTO accounts (id) VALUES ($1)`, accountID); err != nil {
		t.Fatal(err)
	}
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	for range 4 {
		insertJob(t, pool, accountID, &past, 5)
	}
	kept := []string{insertJob(t, pool, accountID, &future, 5), insertJob(t, pool, accountID, nil, 5)}
	rec.Reset()

	n, err := (&Service{pool: pool}).sweepExpired(ctx, 3)
	if err != nil || n != 4 {
		t.Fatalf("sweepExpired = %d, %v; want 4", n, err)
	}
	for _, table := range []struct{ name, jobColumn string }{
		{"jobs", "id"}, {"report_requests", "job_id"}, {"report_chunks", "job_id"}, {"reports", "job_id"},
	} {
		var all, ofKept int
		err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE `+table.jobColumn+` = ANY ($1)) FROM `+table.name, kept).Scan(&all, &ofKept)
		if err != nil {
			t.Fatal(err)
		}
		if all != ofKept {
			t.Errorf("%s: %d rows left, %d of them the kept jobs'", table.name, all, ofKept)
		}
	}
	for _, q := range []struct {
		name string
		rows int64
	}{{"ReportChunkDeleteOfExpiredJobs", 20}, {"JobDeleteExpired", 4}} {
		var total int64
		for i, s := range rec.Named(q.name) {
			total += s.Rows
			if s.Rows > 3 {
				t.Errorf("%s statement %d deleted %d rows, more than a batch of 3", q.name, i+1, s.Rows)
			}
		}
		if total != q.rows { // chunks left to the jobs' cascade would be missing here
			t.Errorf("%s deleted %d rows in all, want %d", q.name, total, q.rows)
		}
	}
}

// TestSweepReadsOnlyExpiredJobs: the sweep first runs on empty tables; once live jobs and
// their chunks fill them, a round still reads only the expired jobs and their chunks, never a
// whole table. The pool's one connection would keep a plan made on the empty tables (db.Open
// forces generic plans); db.PlannedPerRun plans every round for the rows it meets.
func TestSweepReadsOnlyExpiredJobs(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	tables := []string{"jobs", "report_chunks"}
	pool := dbtest.NewPlanningPool(t, ctx, tables...)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	const accountID = "acct_sweep"
	exec(`INSERT INTO accounts (id) VALUES ($1)`, accountID)
	s := &Service{pool: pool}
	if _, err := s.SweepExpired(ctx); err != nil { // planned on the empty tables
		t.Fatal(err)
	}
	const live, expired, chunks = 20_000, 150, 5 // more expired jobs than one round takes
	exec(`INSERT INTO jobs (id, account_id, type, status, river_job_id, finished_at, expires_at)
		SELECT 'job_' || lpad(g::text, 26, '0'), $1, 'report', 'succeeded', 0, now() - interval '1 day',
		       now() + CASE WHEN g <= $2 THEN interval '-1 hour' ELSE interval '1 day' END
		FROM generate_series(1, $3::int) g`, accountID, expired, live+expired)
	exec(`INSERT INTO report_chunks (account_id, job_id, seq, data)
		SELECT account_id, id, g, 'a chunk' FROM jobs, generate_series(0, $1::int - 1) g`, chunks)

	dbtest.NoSeqScans(t, ctx, pool, tables, func() {
		n, err := s.SweepExpired(ctx)
		if err != nil || n != expired {
			t.Fatalf("swept %d jobs (%v), want %d", n, err, expired)
		}
	})
}
