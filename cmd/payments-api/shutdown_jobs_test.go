package main

import (
	"context"
	"testing"

	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/internal/testing/integration"
)

// TestShutdownFinishesRunningJobs sends the shutdown (what SIGTERM does) while a report is
// mid-build: the process stops taking requests, waits for the job, and returns only once the
// job succeeded, in its first attempt. The build is held on a table lock the test releases
// after the shutdown has begun.
func TestShutdownFinishesRunningJobs(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	r := startServe(t, map[string]string{"DATABASE_URL": url, "DEMO_API_KEYS": processKey, "SHUTDOWN_TIMEOUT": "20s"}, true)

	pool := integration.Pool(t, url)
	integration.SeedPayments(t, pool, processKey, 10)
	hold, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(context.Background()) }() // a no-op once committed
	if _, err := hold.Exec(context.Background(), `LOCK TABLE report_chunks IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	jobID := integration.RequestReport(t, apitest.NewClient(t, r.base, processKey))
	integration.WaitFor(t, func() bool {
		return integration.Count(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO report_chunks%'`) == 1
	})

	r.stop() // SIGTERM
	integration.WaitFor(t, func() bool { return r.status("/healthz") == 0 })
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		t.Fatalf("serve returned (%v) while a job was running", err)
	default:
	}
	if err := hold.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.wait(t); err != nil {
		t.Errorf("serve: %v", err)
	}
	if n := integration.Count(t, pool, `SELECT count(*) FROM jobs JOIN river_job ON river_job.id = jobs.river_job_id
		WHERE jobs.id = $1 AND jobs.status = 'succeeded' AND river_job.state = 'completed' AND river_job.attempt = 1`, jobID); n != 1 {
		t.Errorf("the running job did not finish during the shutdown")
	}
}
