package integration

import (
	"context"
	"encoding/csv"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// TestKilledWorkerJobFinishesExactlyOnce kills a worker process with SIGKILL in the middle
// of a report and starts a new process: River rescues the job after JOB_RESCUE_AFTER, the
// new process resumes it from the last committed page, and the report holds every payment
// exactly once. The build is held mid-job deterministically: the test holds an uncommitted
// chunk with the second page's number, so the worker's first page commits and its second
// waits.
func TestKilledWorkerJobFinishesExactlyOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs processes for about half a minute")
	}
	url := dbtest.NewURL(t)
	api := startProcess(t, url, map[string]string{"PROCESS_ROLE": roleAPI})
	pool := Pool(t, url)
	const rows = 2500 // three pages of 1000
	SeedPayments(t, pool, testKey, rows)
	client := apitest.NewClient(t, api.Base, testKey)
	jobID := RequestReport(t, client)

	hold, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(context.Background()) }() // a no-op once rolled back
	if _, err := hold.Exec(context.Background(), `INSERT INTO report_chunks (account_id, job_id, seq, data)
		SELECT account_id, id, 1, '' FROM jobs WHERE id = $1`, jobID); err != nil {
		t.Fatal(err)
	}
	worker := startProcess(t, url, map[string]string{"PROCESS_ROLE": roleWorker})
	WaitFor(t, func() bool {
		return Count(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO report_chunks%'`) == 1
	})
	if n := Count(t, pool, `SELECT rows_processed FROM jobs WHERE id = $1 AND status = 'running'`, jobID); n != 1000 {
		t.Fatalf("%d rows written before the kill, want the first page's 1000", n)
	}
	worker.Kill(t)
	if err := hold.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}

	restarted := startProcess(t, url, map[string]string{"PROCESS_ROLE": roleAll})
	client = apitest.NewClient(t, restarted.Base, testKey)
	WaitForJob(t, client, jobID, "succeeded", 90*time.Second)

	if n := Count(t, pool, `SELECT river_job.attempt FROM river_job JOIN jobs ON jobs.river_job_id = river_job.id WHERE jobs.id = $1`, jobID); n != 2 {
		t.Errorf("the job ran %d times, want 2: the killed attempt and the rescue", n)
	}
	if n := Count(t, pool, `SELECT count(*) FROM events WHERE type = 'report.succeeded'`); n != 1 {
		t.Errorf("%d report.succeeded events, want 1", n)
	}
	var j struct {
		Result struct {
			DownloadURL string `json:"download_url"`
		} `json:"result"`
	}
	client.Get("/jobs/"+jobID).Decode(t, &j)
	assertEveryPaymentOnce(t, client.Get(j.Result.DownloadURL), rows)
}

// assertEveryPaymentOnce checks a CSV report lists pay_seed1..pay_seedN, each exactly once.
func assertEveryPaymentOnce(t *testing.T, res *apitest.Response, n int) {
	t.Helper()
	if res.Status != http.StatusOK {
		t.Fatalf("download: %d %s", res.Status, res.Body)
	}
	records, err := csv.NewReader(strings.NewReader(string(res.Body))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range records[1:] {
		seen[r[0]]++
	}
	if len(records)-1 != n || len(seen) != n {
		t.Errorf("the report has %d rows, %d distinct, want %d once each", len(records)-1, len(seen), n)
	}
}

// TestTwoProcessesBuildEachReportOnce runs two servers on one database and requests 20
// reports through both: each is built by exactly one attempt of one process. The builds are
// made to overlap: each process builds one report at a time (JOB_WORKERS=1) and the test
// holds the payments table locked until two builds are running, one in each process, both
// waiting on their first page.
func TestTwoProcessesBuildEachReportOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs two processes")
	}
	url := dbtest.NewURL(t)
	// A build waits on the lock below; JOB_TIMEOUT gives it room enough not to time out.
	env := map[string]string{"PROCESS_ROLE": roleAll, "JOB_WORKERS": "1", "JOB_TIMEOUT": "30s", "JOB_RESCUE_AFTER": "31s"}
	first := startProcess(t, url, env)
	second := startProcess(t, url, env)
	pool := Pool(t, url)
	const rows = 1500
	SeedPayments(t, pool, testKey, rows)
	clients := []*apitest.Client{apitest.NewClient(t, first.Base, testKey), apitest.NewClient(t, second.Base, testKey)}

	ctx := context.Background()
	lock, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Rollback(ctx) }()
	if _, err := lock.Exec(ctx, `LOCK TABLE payments IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 20 {
		ids = append(ids, RequestReport(t, clients[i%2]))
	}
	const building = `SELECT count(DISTINCT attempted_by[cardinality(attempted_by)]) FROM river_job WHERE kind = 'report.build' AND state = 'running'`
	for deadline := time.Now().Add(20 * time.Second); Count(t, pool, building) < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("never two builds running at once, one in each process")
		}
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	for i, id := range ids {
		WaitForJob(t, clients[(i+1)%2], id, "succeeded", 60*time.Second)
	}
	if n := Count(t, pool, `SELECT count(*) FROM river_job WHERE kind = 'report.build' AND attempt = 1 AND state = 'completed'`); n != 20 {
		t.Errorf("%d of 20 builds completed in exactly one attempt", n)
	}
	if n := Count(t, pool, `SELECT count(*) FROM reports WHERE row_count = $1`, rows); n != 20 {
		t.Errorf("%d complete reports, want 20", n)
	}
	if n := Count(t, pool, `SELECT count(*) FROM events WHERE type = 'report.succeeded'`); n != 20 {
		t.Errorf("%d report.succeeded events, want 20", n)
	}
	if n := Count(t, pool, `SELECT count(*) FROM report_chunks`); n != 20*2 {
		t.Errorf("%d chunks, want 2 pages for each of 20 reports", n)
	}
}
