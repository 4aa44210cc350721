package handlers_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/payments-api/payments-api/internal/apitest"
)

// TestMetricsCountWhatHappened drives one key through every idempotency outcome (in flight,
// claimed, replayed, mismatch) and reads GET /metrics: each outcome, each request's duration
// under its route template and status, and the pool's and process's series are there.
func TestMetricsCountWhatHappened(t *testing.T) {
	t.Parallel()
	gate := newGatedProcessor()
	b := setupWithProcessor(t, gate)
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
// "unmatched", so a client cannot create series by inventing paths.
func TestMetricsNameUnmatchedRoutesOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range []string{"/nope-1", "/nope-2"} {
		if res := b.client.Get(path); res.Status != http.StatusNotFound {
			t.Fatalf("GET %s: %d", path, res.Status)
		}
	}
	body := string(b.client.Get("/metrics", apitest.NoAuth()).Body)
	if want := `http_request_duration_seconds_count{method="GET",route="unmatched",status="404"} 2`; !slices.Contains(strings.Split(body, "\n"), want) {
		t.Errorf("GET /metrics lacks %q", want)
	}
	if strings.Contains(body, "nope") {
		t.Error("an unmatched path became a label")
	}
}

// TestMetricsCountWaitingJobs: jobs_queued is counted from the queue when /metrics is
// scraped. The test server only enqueues (no worker runs), so a requested report waits in
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
	if m := scrape(); !slices.Contains(strings.Split(m, "\n"), `jobs_queued{queue="default"} 2`) {
		t.Errorf("two reports requested, but GET /metrics lacks jobs_queued 2 for the default queue:\n%s", m)
	}
	if res := b.client.Do(http.MethodDelete, "/jobs/"+j.ID, nil); res.Status != http.StatusOK {
		t.Fatalf("cancel %s: %d %s", j.ID, res.Status, res.Body)
	}
	if m := scrape(); !slices.Contains(strings.Split(m, "\n"), `jobs_queued{queue="default"} 1`) {
		t.Errorf("one of two reports canceled, but GET /metrics lacks jobs_queued 1:\n%s", m)
	}
	if res := b.client.Do(http.MethodDelete, "/jobs/"+j2.ID, nil); res.Status != http.StatusOK {
		t.Fatalf("cancel %s: %d %s", j2.ID, res.Status, res.Body)
	}
	if m := scrape(); strings.Contains(m, `jobs_queued{queue="default"}`) {
		t.Errorf("every report canceled, but GET /metrics still counts the default queue:\n%s", m)
	}
}
