package handlers_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// TestMetricsCountWhatHappened drives one key through every idempotency outcome (in flight,
// claimed, replayed, mismatch) and reads GET /metrics: each outcome, each request's duration
// under its route template and status, and the pool's and process's series are there.
func TestMetricsCountWhatHappened(t *testing.T) {
	t.Parallel()
	gate := newGatedProcessor()
	b := setup(t, withProcessor(gate))
	// Before the server closes: Close waits for the held request, so a Fatal below while the
	// gate is shut would otherwise hang the package until go test's timeout.
	t.Cleanup(gate.open)
	key := newKey()

	first := make(chan *apitest.Response, 1) // buffered: the sender never blocks if the test stops first
	go func() { first <- b.client.Post("/payments", visa(700), apitest.Header("Idempotency-Key", key)) }()
	gate.waitCharging(t) // the first request holds the key and is charging
	// A retry that waits for the first instead of answering 409 at once gives up after the
	// client's timeout (apitest.RequestTimeout) and fails here.
	if res := b.client.Post("/payments", visa(700), apitest.Header("Idempotency-Key", key)); res.Status != http.StatusConflict {
		t.Fatalf("retry in flight: %d %s, want 409 at once (0: no answer within the client's timeout)", res.Status, res.Body)
	}
	gate.open()
	created := <-first // bounded by the client's timeout
	if created.Status != http.StatusCreated {
		t.Fatalf("first request: %d %s", created.Status, created.Body)
	}
	if res := b.client.Post("/payments", visa(700), apitest.Header("Idempotency-Key", key)); res.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry after completion: %d %s, want a replay", res.Status, res.Body)
	}
	if res := b.client.Post("/payments", visa(701), apitest.Header("Idempotency-Key", key)); res.Status != http.StatusUnprocessableEntity {
		t.Fatalf("retry with another body: %d %s", res.Status, res.Body)
	}
	if res := b.client.Get(created.Header.Get("Location")); res.Status != http.StatusOK {
		t.Fatalf("get: %d %s", res.Status, res.Body)
	}

	res := b.client.Get("/metrics", apitest.NoAuth())
	if res.Status != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", res.Status, res.Body)
	}
	body := string(res.Body)
	lines := strings.Split(body, "\n")
	for _, want := range []string{
		`idempotency_requests_total{operation="payments.create",outcome="in_flight"} 1`,
		`idempotency_requests_total{operation="payments.create",outcome="claimed"} 1`,
		`idempotency_requests_total{operation="payments.create",outcome="replayed"} 1`,
		`idempotency_requests_total{operation="payments.create",outcome="mismatch"} 1`,
		`http_request_duration_seconds_count{method="POST",route="/payments",status="201"} 2`,
		`http_request_duration_seconds_count{method="POST",route="/payments",status="409"} 1`,
		`http_request_duration_seconds_count{method="POST",route="/payments",status="422"} 1`,
		`http_request_duration_seconds_count{method="GET",route="/payments/{id}",status="200"} 1`,
		"ratelimit_fallbacks_total 0",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("GET /metrics lacks the line %q", want)
		}
	}
	for _, name := range []string{"pgxpool_acquires_total ", "pgxpool_max_conns ", "process_resident_memory_bytes "} {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, name) }) {
			t.Errorf("GET /metrics lacks %s", name)
		}
	}
	if strings.Contains(body, "pay_") || strings.Contains(body, key) {
		t.Error("GET /metrics exposes an id or a key as a label")
	}
}

// TestMetricsNameUnmatchedRoutesOnce: a path that matches no route is recorded as
// "unmatched", so a client cannot create series by inventing paths. So is one that echo's
// router took for a route with a slash in its parameter, which the spec's {id} cannot hold.
func TestMetricsNameUnmatchedRoutesOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range []string{"/nope-1", "/nope-2", "/payments/a/b/c/d", "/refunds/x/y"} {
		if res := b.client.Get(path); res.Status != http.StatusNotFound {
			t.Fatalf("GET %s: %d", path, res.Status)
		}
	}
	body := string(b.client.Get("/metrics", apitest.NoAuth()).Body)
	if want := `http_request_duration_seconds_count{method="GET",route="unmatched",status="404"} 4`; !slices.Contains(strings.Split(body, "\n"), want) {
		t.Errorf("GET /metrics lacks %q", want)
	}
	if strings.Contains(body, "nope") {
		t.Error("an unmatched path became a label")
	}
}

// TestMetricsSeriesDoNotGrowWithRequests: whatever method and path clients send, /metrics
// keeps the same series. After a warm-up that sent one request of each kind the random ones
// below can be (an unknown method on each shape of path, with and without a key), 1,000
// requests with random methods and random paths add no series: the method is OTHER, the path
// is its route template or "unmatched", and the status is the server's own.
func TestMetricsSeriesDoNotGrowWithRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rng := rand.New(rand.NewPCG(18, 5)) // seeded: a failure replays exactly
	send := func(method, path string, withKey bool) {
		var opts []apitest.Option
		if !withKey {
			opts = append(opts, apitest.NoAuth())
		}
		b.client.Do(method, path, nil, opts...) // apitest checks the 404 or 405 against the spec
	}

	for _, shape := range pathShapes {
		for _, withKey := range []bool{true, false} {
			send("XWARMUP", shape(rng), withKey)
		}
	}
	scrapeSeries(t, b) // the first scrape is measured once it has answered: the next one counts it
	before := scrapeSeries(t, b)

	for range 1000 {
		send(randomMethod(rng), pathShapes[rng.IntN(len(pathShapes))](rng), rng.IntN(2) == 0)
	}
	after := scrapeSeries(t, b)
	var added []string
	for series := range after {
		if !before[series] {
			added = append(added, series)
		}
	}
	if len(added) > 0 || len(after) != len(before) {
		slices.Sort(added)
		t.Errorf("%d series after the warm-up, %d after 1,000 requests with random methods and paths; new ones include:\n%s",
			len(before), len(after), strings.Join(added[:min(len(added), 5)], "\n"))
	}
}

// pathShapes are the kinds of path the random requests take: unknown paths, and random
// segments under routes that exist (an unknown method on "/payments/{id}" is a 405 there).
var pathShapes = []func(*rand.Rand) string{
	func(r *rand.Rand) string { return "/" + randomSegment(r) },
	func(r *rand.Rand) string { return "/" + randomSegment(r) + "/" + randomSegment(r) },
	func(r *rand.Rand) string { return "/payments/" + randomSegment(r) },
	func(r *rand.Rand) string { return "/payments/" + randomSegment(r) + "/" + randomSegment(r) },
	func(r *rand.Rand) string { return "/refunds/" + randomSegment(r) },
	func(r *rand.Rand) string { return "/webhook-endpoints/" + randomSegment(r) + "/deliveries" },
	func(r *rand.Rand) string { return "/events/" + randomSegment(r) + "/" + randomSegment(r) },
	func(r *rand.Rand) string { return "/problems/" + randomSegment(r) },
}

func randomSegment(r *rand.Rand) string {
	return randomString(r, "abcdefghijklmnopqrstuvwxyz0123456789-_", 1+r.IntN(12))
}

// randomMethod is a random token (RFC 9110 §5.6.2) that is no standard method.
func randomMethod(r *rand.Rand) string {
	for {
		m := randomString(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~", 1+r.IntN(10))
		switch m {
		case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
			http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
			continue
		}
		return m
	}
}

func randomString(r *rand.Rand, alphabet string, n int) string {
	s := make([]byte, n)
	for i := range s {
		s[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(s)
}

// scrapeSeries reads GET /metrics as a set of series: every sample line, without its value.
func scrapeSeries(t *testing.T, b *testBundle) map[string]bool {
	t.Helper()
	res := b.client.Get("/metrics", apitest.NoAuth())
	if res.Status != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", res.Status, res.Body)
	}
	series := map[string]bool{}
	for _, line := range strings.Split(string(res.Body), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			series[line[:strings.LastIndexByte(line, ' ')]] = true
		}
	}
	return series
}

// TestMetricsCountWaitingJobs: jobs_queued is counted from the queue when /metrics is
// scraped, by state, and jobs_oldest_available_age_seconds says how long the job due longest
// has waited. The test server only enqueues (no worker runs), so a requested report waits in
// River's default queue until it is canceled.
func TestMetricsCountWaitingJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	scrape := func() string { return string(b.client.Get("/metrics", apitest.NoAuth()).Body) }
	if m := scrape(); strings.Contains(m, "jobs_queued{") {
		t.Fatalf("jobs_queued before any job was requested:\n%s", m)
	}
	j := requestReport(t, b.client, reportBody("payments", "csv"))
	j2 := requestReport(t, b.client, reportBody("refunds", "json"))
	if _, err := b.pool.Exec(t.Context(), `UPDATE river_job SET scheduled_at = now() - interval '90 seconds'`); err != nil { // due for a while
		t.Fatal(err)
	}
	m := scrape()
	if !slices.Contains(strings.Split(m, "\n"), `jobs_queued{queue="default",state="available"} 2`) {
		t.Errorf("two reports requested, but GET /metrics lacks jobs_queued 2 for the default queue:\n%s", m)
	}
	var behind float64
	if _, err := fmt.Sscanf(m[strings.Index(m, "\njobs_oldest_available_age_seconds{")+1:], `jobs_oldest_available_age_seconds{queue="default"} %g`, &behind); err != nil || behind < 90 {
		t.Errorf("jobs due 90 s ago, but jobs_oldest_available_age_seconds reads %g (%v):\n%s", behind, err, m)
	}
	if res := b.client.Do(http.MethodDelete, "/jobs/"+j.ID, nil); res.Status != http.StatusOK {
		t.Fatalf("cancel %s: %d %s", j.ID, res.Status, res.Body)
	}
	if m := scrape(); !slices.Contains(strings.Split(m, "\n"), `jobs_queued{queue="default",state="available"} 1`) {
		t.Errorf("one of two reports canceled, but GET /metrics lacks jobs_queued 1:\n%s", m)
	}
	if res := b.client.Do(http.MethodDelete, "/jobs/"+j2.ID, nil); res.Status != http.StatusOK {
		t.Fatalf("cancel %s: %d %s", j2.ID, res.Status, res.Body)
	}
	if m := scrape(); strings.Contains(m, `jobs_queued{queue="default"`) || strings.Contains(m, `jobs_oldest_available_age_seconds{`) {
		t.Errorf("every report canceled, but GET /metrics still counts the default queue:\n%s", m)
	}
}
