package handlers_test

import (
	"context"
	"encoding/csv"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// job is the part of a job body the tests read.
type job struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Progress struct {
		RowsProcessed int64 `json:"rows_processed"`
	} `json:"progress"`
	StartedAt *time.Time `json:"started_at"`
	Result    *struct {
		ReportID    string `json:"report_id"`
		DownloadURL string `json:"download_url"`
	} `json:"result"`
}

// reportBody asks for a report of the whole test's time range.
func reportBody(typ, format string) map[string]any {
	now := time.Now().UTC()
	return map[string]any{
		"type": typ, "format": format,
		"created_gte": now.Add(-time.Hour).Format(time.RFC3339), "created_lt": now.Add(time.Hour).Format(time.RFC3339),
	}
}

// requestReport answers the 202's job.
func requestReport(t *testing.T, c *apitest.Client, body map[string]any) job {
	t.Helper()
	res := c.Post("/reports", body, apitest.Header("Idempotency-Key", newKey()))
	if res.Status != http.StatusAccepted {
		t.Fatalf("POST /reports: %d %s", res.Status, res.Body)
	}
	var j job
	res.Decode(t, &j)
	return j
}

// waitForJob polls the job until it reaches status (or fails the test after 30 s).
func waitForJob(t *testing.T, c *apitest.Client, id, status string) job {
	t.Helper()
	var j job
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		res := c.Get("/jobs/" + id)
		if res.Status != http.StatusOK {
			t.Fatalf("GET /jobs/%s: %d %s", id, res.Status, res.Body)
		}
		res.Decode(t, &j)
		if j.Status == status {
			return j
		}
	}
	t.Fatalf("job %s is %s after 30s, want %s", id, j.Status, status)
	return j
}

// seedPayments inserts n succeeded payments of the account with key apiKey, created at now.
func (b *testBundle) seedPayments(t *testing.T, apiKey string, n int, createdAt time.Time) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `
		INSERT INTO payments (id, account_id, amount, currency, status, payment_method, created_at, updated_at)
		SELECT 'pay_seed' || md5(random()::text), k.account_id, 100 + g, 'usd', 'succeeded', 'pm_card_visa', $3, $3
		FROM generate_series(1, $2) g, api_keys k
		WHERE k.key_hash = sha256($1::text::bytea)`, apiKey, n, createdAt)
	if err != nil {
		t.Fatal(err)
	}
}

// TestALongReportIsBuiltInAsManyRunsAsItTakes: a run of a build that JOB_TIMEOUT stops after
// it wrote pages is snoozed, not failed: the next run resumes after them, and none counts
// against the job's five attempts, so a report of any size is built. The test lets each run
// write pages, then holds report_chunks (a page's insert waits for its lock) until the run
// times out; seven times, more runs than attempts, then it lets the last run finish.
func TestALongReportIsBuiltInAsManyRunsAsItTakes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startWorkersWithTimeout(t, b.pool, 10, 300*time.Millisecond)
	b.seedPayments(t, testKey, 5000, time.Now())
	ctx := context.Background()
	hold := func() pgx.Tx {
		tx, err := b.pool.Begin(ctx)
		if err == nil {
			_, err = tx.Exec(ctx, `LOCK TABLE report_chunks IN SHARE MODE`)
		}
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}
	held := hold()
	t.Cleanup(func() { _ = held.Rollback(ctx) }) // the pool cannot close while a test fails holding one
	j := requestReport(t, b.client, reportBody("payments", "csv"))
	var rows int64
	var run time.Time
	read := func() {
		err := b.pool.QueryRow(ctx, `SELECT jobs.rows_processed, coalesce(river_job.attempted_at, 'epoch')
			FROM jobs JOIN river_job ON river_job.id = jobs.river_job_id WHERE jobs.id = $1`, j.ID).Scan(&rows, &run)
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 7 {
		read()
		lastRows, lastRun := rows, run
		_ = held.Rollback(ctx) // the run writes pages
		waitUntil(t, func() bool { read(); return rows > lastRows })
		held = hold() // until the run times out
		for deadline := time.Now().Add(10 * time.Second); !run.After(lastRun); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("run %d: no run of the job began within 10 s of one that timed out after writing pages (%d rows)", i+1, rows)
			}
			read()
		}
	}
	_ = held.Rollback(ctx)
	if done := waitForJob(t, b.client, j.ID, "succeeded"); done.Progress.RowsProcessed != 5000 {
		t.Errorf("the report holds %d rows, want 5000", done.Progress.RowsProcessed)
	}
}

func TestReportIsAcceptedPolledAndDownloaded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startWorkers(t, b.pool, 3) // several pages even for a handful of rows
	var want []string
	for range 7 {
		p, _ := createPayment(t, b.client, 1000)
		want = append(want, p.ID)
	}
	createPayment(t, b.other, 1000)                                       // another account's payment: never in the report
	b.seedPayments(t, testKey, 2, time.Now().Add(-48*time.Hour))          // out of range
	b.seedPayments(t, otherKey, 2, time.Now().Add(-10*time.Minute).UTC()) // in range, other account

	key := newKey()
	body := reportBody("payments", "csv")
	res := b.client.Post("/reports", body, apitest.Header("Idempotency-Key", key))
	if res.Status != http.StatusAccepted || res.Header.Get("Retry-After") == "" {
		t.Fatalf("POST /reports: %d Retry-After %q %s", res.Status, res.Header.Get("Retry-After"), res.Body)
	}
	var accepted job
	res.Decode(t, &accepted)
	if loc := res.Header.Get("Location"); loc != "/jobs/"+accepted.ID || accepted.Status != "queued" {
		t.Fatalf("Location %q, job %+v", loc, accepted)
	}
	replay := b.client.Post("/reports", body, apitest.Header("Idempotency-Key", key))
	if replay.Header.Get("Location") != res.Header.Get("Location") || string(replay.Body) != string(res.Body) ||
		replay.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %d Location %q body %s", replay.Status, replay.Header.Get("Location"), replay.Body)
	}

	done := waitForJob(t, b.client, accepted.ID, "succeeded")
	if done.Progress.RowsProcessed != 7 || done.Result == nil || done.StartedAt == nil {
		t.Fatalf("finished job: %+v", done)
	}
	if n := b.count(t, `SELECT count(*) FROM jobs`); n != 1 {
		t.Errorf("%d jobs after a replayed request, want 1", n)
	}
	if n := b.count(t, `SELECT count(*) FROM events WHERE type = 'report.succeeded' AND data->>'id' = $1`, accepted.ID); n != 1 {
		t.Errorf("%d report.succeeded events, want 1", n)
	}

	dl := b.client.Get(done.Result.DownloadURL)
	if dl.Status != http.StatusOK || !strings.HasPrefix(dl.Header.Get("Content-Type"), "text/csv") ||
		!strings.Contains(dl.Header.Get("Content-Disposition"), done.Result.ReportID+".csv") {
		t.Fatalf("download: %d %v", dl.Status, dl.Header)
	}
	records, err := csv.NewReader(strings.NewReader(string(dl.Body))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if records[0][0] != "id" || records[0][1] != "amount" {
		t.Errorf("header row %q", records[0])
	}
	var got []string
	for _, r := range records[1:] {
		got = append(got, r[0])
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("report rows %q, want exactly the account's payments in range %q", got, want)
	}

	notModified := b.client.Get(done.Result.DownloadURL, apitest.Header("If-None-Match", dl.Header.Get("ETag")))
	if notModified.Status != http.StatusNotModified || len(notModified.Body) != 0 {
		t.Errorf("If-None-Match with the ETag: %d %q", notModified.Status, notModified.Body)
	}
	var meta struct {
		RowCount int64 `json:"row_count"`
		ByteSize int64 `json:"byte_size"`
	}
	b.client.Get("/reports/"+done.Result.ReportID).Decode(t, &meta)
	if meta.RowCount != 7 || meta.ByteSize != int64(len(dl.Body)) {
		t.Errorf("metadata %+v, download is %d bytes", meta, len(dl.Body))
	}

	for _, path := range []string{"/jobs/" + accepted.ID, "/reports/" + done.Result.ReportID, done.Result.DownloadURL} {
		if res := b.other.Get(path); res.Status != http.StatusNotFound {
			t.Errorf("another account's GET %s: %d", path, res.Status)
		}
	}
}

// TestASlowDownloadIsNotCutOff: a large report read slowly takes longer than a request may
// work (REQUEST_TIMEOUT) and than the server gives an answer (WRITE_TIMEOUT), but each
// chunk's read and each write has a deadline of its own, so a client that keeps reading gets
// the whole file.
func TestASlowDownloadIsNotCutOff(t *testing.T) {
	t.Parallel()
	const requestTimeout, writeTimeout = 2 * time.Second, 3 * time.Second
	b := setup(t, withWriteTimeout(writeTimeout), withConfig(func(c *app.Config) { c.RequestTimeout = requestTimeout }))
	// The server's pool has REQUEST_TIMEOUT as its statement_timeout: the seeding and the
	// build go through a pool of their own, so a busy machine cannot time them out.
	setupPool, err := pgxpool.New(context.Background(), b.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(setupPool.Close)
	startWorkers(t, setupPool, 1000)
	const rows = 20_000 // about 2.7 MB of CSV: over 4 s at the client's pace
	(&testBundle{pool: setupPool}).seedPayments(t, testKey, rows, time.Now().UTC())
	done := waitForJob(t, b.client, requestReport(t, b.client, reportBody("payments", "csv")).ID, "succeeded")

	start := time.Now()
	dl := b.client.Via(slowClient()).Get(done.Result.DownloadURL)
	took := time.Since(start)
	var meta struct {
		ByteSize int64 `json:"byte_size"`
	}
	b.client.Get("/reports/"+done.Result.ReportID).Decode(t, &meta)
	if dl.Status != http.StatusOK || int64(len(dl.Body)) != meta.ByteSize || strings.Count(string(dl.Body), "\n") != rows+1 {
		t.Errorf("download: %d, %d bytes of %d, %d lines", dl.Status, len(dl.Body), meta.ByteSize, strings.Count(string(dl.Body), "\n"))
	}
	if took < writeTimeout {
		t.Errorf("the download took %v, not beyond WRITE_TIMEOUT: the test shows nothing", took)
	}
	if strings.Contains(b.logs.String(), "cut_off") {
		t.Fatalf("a download logged as cut off:\n%s", b.logs.String())
	}

	// A client that stops reading is cut off once a write has waited REQUEST_TIMEOUT, and the
	// request's log line says so: its 200 alone would say all went well.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.client.BaseURL+done.Result.DownloadURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Request-Id", "stalled-download")
	res, err := slowClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if _, err := io.ReadFull(res.Body, make([]byte, 32<<10)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * requestTimeout) // reads nothing
	if n, err := io.Copy(io.Discard, res.Body); err == nil {
		t.Errorf("a client that stopped reading got the rest (%d bytes)", n)
	}
	if line := logLine(t, b, "stalled-download"); line["level"] != "WARN" || line["cut_off"] == nil {
		t.Errorf("a download cut off logged as %v, want a warning with cut_off", line)
	}
}

// slowClient reads each answer 32 KiB at a time, 20 times a second, through a small socket
// buffer: a client on a slow link.
func slowClient() *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{Timeout: apitest.RequestTimeout, Transport: slowTransport{&http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if tcp, ok := conn.(*net.TCPConn); ok {
				err = tcp.SetReadBuffer(32 << 10)
			}
			return conn, err
		},
	}}}
}

type slowTransport struct{ http.RoundTripper }

func (s slowTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := s.RoundTripper.RoundTrip(req)
	if err == nil {
		res.Body = slowBody{res.Body}
	}
	return res, err
}

type slowBody struct{ io.ReadCloser }

func (b slowBody) Read(p []byte) (int, error) {
	time.Sleep(50 * time.Millisecond)
	return b.ReadCloser.Read(p[:min(len(p), 32<<10)])
}

func TestReportJSONListsResourcesAndEmptyReportsAreValid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startWorkers(t, b.pool, 2)
	p, _ := createPayment(t, b.client, 1000)
	res := b.client.Post("/refunds", map[string]any{"payment_id": p.ID, "amount": 300}, apitest.Header("Idempotency-Key", newKey()))
	if res.Status != http.StatusCreated {
		t.Fatalf("refund: %d %s", res.Status, res.Body)
	}

	cases := []struct {
		typ, format string
		rows        int
	}{{"payments", "json", 1}, {"refunds", "json", 1}, {"refunds", "csv", 1}}
	for _, c := range cases {
		j := waitForJob(t, b.client, requestReport(t, b.client, reportBody(c.typ, c.format)).ID, "succeeded")
		dl := b.client.Get(j.Result.DownloadURL) // the client checks the body against the spec
		if c.format == "json" {
			var rows []map[string]any
			dl.Decode(t, &rows)
			if len(rows) != c.rows || rows[0]["amount"] == nil {
				t.Errorf("%s %s: %s", c.typ, c.format, dl.Body)
			}
		} else if lines := strings.Count(string(dl.Body), "\n"); lines != c.rows+1 {
			t.Errorf("%s csv has %d lines: %s", c.typ, lines, dl.Body)
		}
	}

	empty := map[string]any{"type": "payments", "format": "json", "created_gte": "2001-01-01T00:00:00Z", "created_lt": "2001-02-01T00:00:00Z"}
	j := waitForJob(t, b.client, requestReport(t, b.client, empty).ID, "succeeded")
	if dl := b.client.Get(j.Result.DownloadURL); strings.TrimSpace(string(dl.Body)) != "[]" {
		t.Errorf("an empty JSON report is %q, want []", dl.Body)
	}
	empty["format"] = "csv"
	j = waitForJob(t, b.client, requestReport(t, b.client, empty).ID, "succeeded")
	if dl := b.client.Get(j.Result.DownloadURL); !strings.HasPrefix(string(dl.Body), "id,amount,") || strings.Count(string(dl.Body), "\n") != 1 {
		t.Errorf("an empty CSV report is %q, want its header row", dl.Body)
	}
}

// A bound finer than the microseconds PostgreSQL keeps still falls between rows: a report
// from a nanosecond after a payment's created_at leaves it out, one up to a nanosecond
// after it takes it in. At the payment's exact instant, a range takes in its start and
// leaves out its end, so back-to-back reports (November's, December's) count it once.
func TestReportRangeFinerThanAMicrosecond(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startWorkers(t, b.pool, 2)
	p, _ := createPayment(t, b.client, 1000)
	var created listedPayment
	b.client.Get("/payments/"+p.ID).Decode(t, &created)
	at := created.createdAt(t)
	hourBefore, hourAfter := at.Add(-time.Hour).Format(time.RFC3339), at.Add(time.Hour).Format(time.RFC3339)
	microAfter := at.Add(time.Microsecond) // what a bound a nanosecond after it is held as
	for _, c := range []struct {
		name, gte, lt   string
		rows            int
		heldGte, heldLt time.Time // the range the report shows
	}{
		{"from a nanosecond after it", nanosAfter(t, created), hourAfter, 0, microAfter, at.Add(time.Hour).Truncate(time.Second)},
		{"up to a nanosecond after it", hourBefore, nanosAfter(t, created), 1, at.Add(-time.Hour).Truncate(time.Second), microAfter},
		{"from its instant", at.Format(time.RFC3339Nano), at.Add(time.Hour).Format(time.RFC3339Nano), 1, at, at.Add(time.Hour)},
		{"up to its instant", at.Add(-time.Hour).Format(time.RFC3339Nano), at.Format(time.RFC3339Nano), 0, at.Add(-time.Hour), at},
	} {
		body := map[string]any{"type": "payments", "format": "json", "created_gte": c.gte, "created_lt": c.lt}
		j := waitForJob(t, b.client, requestReport(t, b.client, body).ID, "succeeded")
		var rows []map[string]any
		b.client.Get(j.Result.DownloadURL).Decode(t, &rows)
		if len(rows) != c.rows {
			t.Errorf("%s (%s to %s, the payment at %s): %d rows, want %d", c.name, c.gte, c.lt, created.CreatedAt, len(rows), c.rows)
		}
		var report struct { // the report shows the range as held
			CreatedGte time.Time `json:"created_gte"`
			CreatedLt  time.Time `json:"created_lt"`
		}
		b.client.Get("/reports/"+j.Result.ReportID).Decode(t, &report)
		if !report.CreatedGte.Equal(c.heldGte) || !report.CreatedLt.Equal(c.heldLt) {
			t.Errorf("%s: the report's range is %s to %s, want %s to %s", c.name,
				report.CreatedGte.Format(time.RFC3339Nano), report.CreatedLt.Format(time.RFC3339Nano),
				c.heldGte.Format(time.RFC3339Nano), c.heldLt.Format(time.RFC3339Nano))
		}
	}
}

// TestAJobSaysWhenToPollUntilItEnds: GET /jobs/{id} carries Retry-After while the job has
// not finished, and none once it has.
func TestAJobSaysWhenToPollUntilItEnds(t *testing.T) {
	t.Parallel()
	b := setup(t) // its jobs only queue until the workers start
	j := requestReport(t, b.client, reportBody("payments", "csv"))
	if res := b.client.Get("/jobs/" + j.ID); res.Status != http.StatusOK || res.Header.Get("Retry-After") != "1" {
		t.Fatalf("a queued job: %d Retry-After %q, want 1", res.Status, res.Header.Get("Retry-After"))
	}
	startWorkers(t, b.pool, 1)
	waitForJob(t, b.client, j.ID, "succeeded")
	if res := b.client.Get("/jobs/" + j.ID); res.Header.Get("Retry-After") != "" {
		t.Errorf("a finished job: Retry-After %q, want none", res.Header.Get("Retry-After"))
	}
}

// TestReportsAtTheEdgesOfTimeAreReadable: a range that ends on the last microsecond RFC 3339
// can write, or starts on the first, is built and shown.
func TestReportsAtTheEdgesOfTimeAreReadable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startWorkers(t, b.pool, 2)
	for _, r := range [][2]string{
		{"9999-12-31T00:00:00Z", "9999-12-31T23:59:59.999999Z"},
		{"0000-01-01T00:00:00Z", "0000-01-02T00:00:00+01:00"},
	} {
		body := map[string]any{"type": "payments", "format": "json", "created_gte": r[0], "created_lt": r[1]}
		j := waitForJob(t, b.client, requestReport(t, b.client, body).ID, "succeeded")
		if res := b.client.Get("/reports/" + j.Result.ReportID); res.Status != http.StatusOK {
			t.Errorf("a report from %s to %s: %d %s", r[0], r[1], res.Status, res.Body)
		}
	}
}

func TestReportRequestValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"created_lt before created_gte", map[string]any{"type": "payments", "created_gte": "2026-02-01T00:00:00Z", "created_lt": "2026-01-01T00:00:00Z"}, "/created_lt"},
		{"empty range", map[string]any{"type": "payments", "created_gte": "2026-02-01T00:00:00Z", "created_lt": "2026-02-01T00:00:00Z"}, "/created_lt"},
		{"a leap second", map[string]any{"type": "payments", "created_gte": "2016-12-31T23:59:60Z", "created_lt": "2017-01-31T00:00:00Z"}, "/created_gte"},
		// Between two microseconds, the finest time PostgreSQL holds: no row can lie in it.
		{"finer than a nanosecond", map[string]any{"type": "payments", "created_gte": "2026-02-01T00:00:00Z", "created_lt": "2026-02-01T00:00:00.0000010001Z"}, "/created_lt"},
		{"range inside a microsecond", map[string]any{"type": "payments", "created_gte": "2026-02-01T00:00:00.0000001Z", "created_lt": "2026-02-01T00:00:00.0000009Z"}, "/created_lt"},
		// A bound the report could not show: RFC 3339 writes a year in four digits, in UTC.
		{"past 9999 once rounded to a microsecond", map[string]any{"type": "payments", "created_gte": "9999-12-31T00:00:00Z", "created_lt": "9999-12-31T23:59:59.9999999Z"}, "/created_lt"},
		{"before 0000 in UTC", map[string]any{"type": "payments", "created_gte": "0000-01-01T00:00:00+01:00", "created_lt": "0000-01-02T00:00:00Z"}, "/created_gte"},
		{"range over 366 days", map[string]any{"type": "payments", "created_gte": "2024-01-01T00:00:00Z", "created_lt": "2025-01-02T00:00:01Z"}, "/created_lt"},
		{"unknown type", map[string]any{"type": "disputes", "created_gte": "2026-01-01T00:00:00Z", "created_lt": "2026-02-01T00:00:00Z"}, "/type"},
		{"unknown format", map[string]any{"type": "payments", "format": "xlsx", "created_gte": "2026-01-01T00:00:00Z", "created_lt": "2026-02-01T00:00:00Z"}, "/format"},
		{"missing created_gte", map[string]any{"type": "payments", "created_lt": "2026-02-01T00:00:00Z"}, "/created_gte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Post("/reports", tt.body, apitest.Header("Idempotency-Key", newKey()))
			p := res.Problem(t)
			if res.Status != http.StatusBadRequest || p.Type != "/problems/invalid-request" || !namesField(p, tt.field) {
				t.Errorf("%d %s, want a 400 naming %s", res.Status, res.Body, tt.field)
			}
		})
	}
	res := b.client.Post("/reports", reportBody("payments", "csv"))
	if p := res.Problem(t); res.Status != http.StatusBadRequest || p.Type != "/problems/invalid-idempotency-key" {
		t.Errorf("without Idempotency-Key: %d %s", res.Status, res.Body)
	}
	if n := b.count(t, `SELECT count(*) FROM jobs`) + b.count(t, `SELECT count(*) FROM river_job`); n != 0 {
		t.Errorf("refused requests left %d jobs behind", n)
	}
}

// namesField reports whether the problem names field: as the entry's field, or, for a
// missing member (reported on its parent object), in the message.
func namesField(p apitest.Problem, field string) bool {
	for _, e := range p.Errors {
		msg, _ := e["message"].(string)
		if e["field"] == field || strings.Contains(msg, "'"+strings.TrimPrefix(field, "/")+"'") {
			return true
		}
	}
	return false
}

func TestListJobsPagesAndFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for range 3 {
		ids = append(ids, requestReport(t, b.client, reportBody("payments", "csv")).ID)
	}
	if res := b.client.Do(http.MethodDelete, "/jobs/"+ids[0], nil); res.Status != http.StatusOK {
		t.Fatalf("cancel: %d %s", res.Status, res.Body)
	}
	var page struct {
		Data    []job `json:"data"`
		HasMore bool  `json:"has_more"`
	}
	b.client.Get("/jobs?limit=2").Decode(t, &page)
	if len(page.Data) != 2 || !page.HasMore || page.Data[0].ID != ids[2] || page.Data[1].ID != ids[1] {
		t.Fatalf("first page %+v", page)
	}
	b.client.Get("/jobs?limit=2&starting_after="+ids[1]).Decode(t, &page)
	if len(page.Data) != 1 || page.HasMore || page.Data[0].ID != ids[0] {
		t.Errorf("second page %+v", page)
	}
	b.client.Get("/jobs?status=canceled").Decode(t, &page)
	if len(page.Data) != 1 || page.Data[0].ID != ids[0] {
		t.Errorf("status=canceled %+v", page)
	}
	b.other.Get("/jobs").Decode(t, &page)
	if len(page.Data) != 0 {
		t.Errorf("another account sees %d jobs", len(page.Data))
	}
}

// TestReportKeyReusedAndInFlight: a report request's Idempotency-Key refuses another body
// (422), and a retry while the first still holds the key answers 409 with Retry-After at once.
// The test holds the key's advisory lock itself, as the first request's transaction would.
func TestReportKeyReusedAndInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := newKey()
	if res := b.client.Post("/reports", reportBody("payments", "csv"), apitest.Header("Idempotency-Key", key)); res.Status != http.StatusAccepted {
		t.Fatalf("first request: %d %s", res.Status, res.Body)
	}
	res := b.client.Post("/reports", reportBody("refunds", "csv"), apitest.Header("Idempotency-Key", key))
	if res.Status != http.StatusUnprocessableEntity || res.Problem(t).Type != "/problems/idempotency-key-reused" {
		t.Errorf("same key, another body: %d %s", res.Status, res.Body)
	}

	var acct struct{ ID string }
	b.client.Get("/account").Decode(t, &acct)
	ctx := context.Background()
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	held := newKey()
	lock := acct.ID + "|reports.create|" + held
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, lock); err != nil {
		t.Fatal(err)
	}
	res = b.client.Post("/reports", reportBody("payments", "csv"), apitest.Header("Idempotency-Key", held))
	if res.Status != http.StatusConflict || res.Header.Get("Retry-After") == "" || res.Problem(t).Type != "/problems/idempotency-key-in-use" {
		t.Errorf("while the key is held: %d Retry-After %q %s", res.Status, res.Header.Get("Retry-After"), res.Body)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, lock); err != nil {
		t.Fatal(err)
	}
	if res := b.client.Post("/reports", reportBody("payments", "csv"), apitest.Header("Idempotency-Key", held)); res.Status != http.StatusAccepted {
		t.Errorf("once the key is free: %d %s", res.Status, res.Body)
	}
}

// TestReportCSVNeutralisesFormulas: a description a spreadsheet would run as a formula is
// written to a CSV report as quoted text with a leading single quote, and to a JSON report
// exactly as it was sent.
func TestReportCSVNeutralisesFormulas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startWorkers(t, b.pool, 10)
	body := visa(1000)
	body["description"] = "=1+1"
	res := b.client.Post("/payments", body, apitest.Header("Idempotency-Key", newKey()))
	if res.Status != http.StatusCreated {
		t.Fatalf("create payment: %d %s", res.Status, res.Body)
	}

	j := waitForJob(t, b.client, requestReport(t, b.client, reportBody("payments", "csv")).ID, "succeeded")
	file := string(b.client.Get(j.Result.DownloadURL).Body)
	if !strings.Contains(file, `,pm_card_visa,,"'=1+1",{},`) {
		t.Errorf("CSV report:\n%s\nwant the description as \"'=1+1\"", file)
	}

	j = waitForJob(t, b.client, requestReport(t, b.client, reportBody("payments", "json")).ID, "succeeded")
	var rows []payment
	b.client.Get(j.Result.DownloadURL).Decode(t, &rows)
	if len(rows) != 1 || rows[0].Description == nil || *rows[0].Description != "=1+1" {
		t.Errorf("JSON report: %+v, want the description =1+1 exactly", rows)
	}
}
