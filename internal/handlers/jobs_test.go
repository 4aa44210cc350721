package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/reports"
	"github.com/payments-api/payments-api/internal/webhooks"
)

// riverState is the state of the queue entry of our job id.
func (b *testBundle) riverState(t *testing.T, jobID string) string {
	t.Helper()
	var state string
	err := b.pool.QueryRow(context.Background(),
		`SELECT river_job.state FROM river_job JOIN jobs ON jobs.river_job_id = river_job.id WHERE jobs.id = $1`, jobID).Scan(&state)
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// waitForRiver waits until the queue entry of jobID reaches state.
func (b *testBundle) waitForRiver(t *testing.T, jobID, state string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b.riverState(t, jobID) == state {
			return
		}
	}
	t.Fatalf("queue entry of %s is %s after 30s, want %s", jobID, b.riverState(t, jobID), state)
}

// waitUntilBlocked waits until a statement containing fragment waits for a lock.
func waitUntilBlocked(t *testing.T, pool *pgxpool.Pool, fragment string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var n int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`, fragment).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
	}
	t.Fatalf("no statement %q waited for a lock within 10s", fragment)
}

func TestCancelQueuedJobNeverRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	createPayment(t, b.client, 1000)
	canceled := requestReport(t, b.client, reportBody("payments", "csv"))
	res := b.client.Do(http.MethodDelete, "/jobs/"+canceled.ID, nil)
	var j job
	res.Decode(t, &j)
	if res.Status != http.StatusOK || j.Status != "canceled" {
		t.Fatalf("DELETE queued job: %d %s", res.Status, res.Body)
	}
	if state := b.riverState(t, canceled.ID); state != "cancelled" {
		t.Errorf("queue entry is %s, want cancelled: a worker could still fetch it", state)
	}

	// Workers start, and a later job proves they ran; the canceled one never started.
	startWorkers(t, b.pool, 10)
	waitForJob(t, b.client, requestReport(t, b.client, reportBody("payments", "csv")).ID, "succeeded")
	j = waitForJob(t, b.client, canceled.ID, "canceled")
	if j.StartedAt != nil || j.Progress.RowsProcessed != 0 || b.count(t, `SELECT count(*) FROM report_chunks WHERE job_id = $1`, canceled.ID) != 0 {
		t.Errorf("the canceled job ran: %+v", j)
	}
}

// TestCanceledJobFetchedAnywayDoesNotRun covers the race River's cancel cannot: a worker
// fetched the job just before the cancel committed. The job row says canceled while the
// queue entry is still available; the worker's status check under the row lock stops it.
func TestCanceledJobFetchedAnywayDoesNotRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	createPayment(t, b.client, 1000)
	j := requestReport(t, b.client, reportBody("payments", "csv"))
	_, err := b.pool.Exec(context.Background(), `UPDATE jobs SET status = 'canceled', finished_at = now(),
		expires_at = now() + interval '1 day' WHERE id = $1`, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	startWorkers(t, b.pool, 10)
	b.waitForRiver(t, j.ID, "cancelled")
	if n := b.count(t, `SELECT count(*) FROM jobs WHERE id = $1 AND started_at IS NULL AND rows_processed = 0`, j.ID) +
		b.count(t, `SELECT count(*) FROM reports`); n != 1 {
		t.Errorf("the canceled job ran")
	}
}

// TestCancelRunningJobStopsBetweenPages holds the build inside its second page (the test
// holds an uncommitted chunk with that page's number, so the worker's insert waits), cancels
// it, and releases it: the second page commits, the cancel is seen before the third.
func TestCancelRunningJobStopsBetweenPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const pageSize = 10
	b.seedPayments(t, testKey, 5*pageSize, time.Now().Add(-time.Minute))
	j := requestReport(t, b.client, reportBody("payments", "csv"))

	hold, err := b.pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(context.Background()) }() // a no-op once rolled back
	if _, err := hold.Exec(context.Background(), `INSERT INTO report_chunks (account_id, job_id, seq, data)
		SELECT account_id, id, 1, '' FROM jobs WHERE id = $1`, j.ID); err != nil {
		t.Fatal(err)
	}
	startWorkers(t, b.pool, pageSize)
	waitUntilBlocked(t, b.pool, "INSERT INTO report_chunks")

	canceled := make(chan job, 1)
	go func() { // it always sends: t.Fatal here would leave the receive below waiting forever
		var c job
		res := b.client.Do(http.MethodDelete, "/jobs/"+j.ID, nil)
		if res.Status == http.StatusOK {
			_ = json.Unmarshal(res.Body, &c)
		}
		canceled <- c
	}()
	waitUntilBlocked(t, b.pool, "pg_advisory_xact_lock") // the cancel waits for the page in progress
	if err := hold.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := <-canceled; c.Status != "canceled" {
		t.Fatalf("DELETE running job answered %+v", c)
	}
	b.waitForRiver(t, j.ID, "cancelled")
	got := waitForJob(t, b.client, j.ID, "canceled")
	if got.Progress.RowsProcessed != 2*pageSize || got.StartedAt == nil {
		t.Errorf("canceled after %d rows, want the %d of the two pages begun before the cancel", got.Progress.RowsProcessed, 2*pageSize)
	}
	if n := b.count(t, `SELECT count(*) FROM reports`); n != 0 {
		t.Errorf("a canceled job left %d reports", n)
	}
}

func TestCancelFinishedOrForeignJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startWorkers(t, b.pool, 10)
	j := waitForJob(t, b.client, requestReport(t, b.client, reportBody("payments", "csv")).ID, "succeeded")
	res := b.client.Do(http.MethodDelete, "/jobs/"+j.ID, nil)
	if p := res.Problem(t); res.Status != http.StatusConflict || p.Type != "/problems/job-not-cancelable" {
		t.Errorf("cancel a succeeded job: %d %s", res.Status, res.Body)
	}
	queued := requestReport(t, b.other, reportBody("payments", "csv"))
	b.waitForRiver(t, queued.ID, "completed")
	if res := b.client.Do(http.MethodDelete, "/jobs/"+queued.ID, nil); res.Status != http.StatusNotFound {
		t.Errorf("cancel another account's job: %d %s", res.Status, res.Body)
	}
	if res := b.client.Do(http.MethodDelete, "/jobs/job_doesnotexist", nil); res.Status != http.StatusNotFound {
		t.Errorf("cancel a missing job: %d %s", res.Status, res.Body)
	}
}

// TestSweepDeletesExpiredJobsAndReports: a report past REPORT_RETENTION is gone at once, and
// the periodic sweep deletes its job with the report and chunks, leaving unexpired and
// unfinished jobs.
func TestSweepDeletesExpiredJobsAndReports(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startWorkers(t, b.pool, 10)
	createPayment(t, b.client, 1000)
	expired := waitForJob(t, b.client, requestReport(t, b.client, reportBody("payments", "csv")).ID, "succeeded")
	kept := waitForJob(t, b.client, requestReport(t, b.client, reportBody("payments", "csv")).ID, "succeeded")
	if _, err := b.pool.Exec(context.Background(), `UPDATE jobs SET expires_at = now() - interval '1 second' WHERE id = $1`, expired.ID); err != nil {
		t.Fatal(err)
	}
	if res := b.client.Get(expired.Result.DownloadURL); res.Status != http.StatusNotFound {
		t.Errorf("expired report before the sweep: %d, want 404 (the sweep may have deleted part of it)", res.Status)
	}
	n, err := reports.NewService(b.pool, insertOnlyQueue(t, b.pool), reports.DefaultRetention).SweepExpired(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("swept %d (%v), want 1", n, err)
	}
	if res := b.client.Get("/jobs/" + expired.ID); res.Status != http.StatusNotFound {
		t.Errorf("expired job: %d", res.Status)
	}
	if res := b.client.Get(expired.Result.DownloadURL); res.Status != http.StatusNotFound {
		t.Errorf("expired report: %d", res.Status)
	}
	if res := b.client.Get(kept.Result.DownloadURL); res.Status != http.StatusOK {
		t.Errorf("unexpired report: %d", res.Status)
	}
	if n := b.count(t, `SELECT count(*) FROM report_chunks WHERE job_id = $1`, expired.ID); n != 0 {
		t.Errorf("%d chunks of the expired report remain", n)
	}
}

// TestSweepFailsJobsRiverGaveUpOn: a job whose River job was discarded without our worker
// finishing it (its attempts used up by crashes) is failed by the sweep, with report.failed
// recorded; a job still waiting in River is left alone.
func TestSweepFailsJobsRiverGaveUpOn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	abandoned := requestReport(t, b.client, reportBody("payments", "csv"))
	waiting := requestReport(t, b.client, reportBody("payments", "csv"))
	_, err := b.pool.Exec(context.Background(),
		`UPDATE river_job SET state = 'discarded', finalized_at = now() WHERE id = (SELECT river_job_id FROM jobs WHERE id = $1)`, abandoned.ID)
	if err != nil {
		t.Fatal(err)
	}
	outbox := events.NewOutbox(webhooks.NewJobQueue(insertOnlyQueue(t, b.pool)))
	builds := reports.NewWorker(b.pool, outbox, reports.DefaultRetention, reports.DefaultPageSize)
	n, err := builds.FailAbandoned(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("failed %d abandoned jobs (%v), want 1", n, err)
	}
	var got job
	b.client.Get("/jobs/"+abandoned.ID).Decode(t, &got)
	if got.Status != "failed" {
		t.Fatalf("abandoned job is %s, want failed", got.Status)
	}
	b.client.Get("/jobs/"+waiting.ID).Decode(t, &got)
	if got.Status != "queued" {
		t.Fatalf("waiting job is %s, want queued", got.Status)
	}
	if n := b.count(t, `SELECT count(*) FROM events WHERE type = 'report.failed' AND data->>'id' = $1`, abandoned.ID); n != 1 {
		t.Fatalf("%d report.failed events for the abandoned job, want 1", n)
	}
	if n, err := builds.FailAbandoned(context.Background()); err != nil || n != 0 {
		t.Fatalf("a second sweep failed %d jobs (%v), want none", n, err)
	}
}
