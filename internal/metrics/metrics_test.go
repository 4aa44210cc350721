package metrics_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/metrics"
)

// TestHooksExportTheirSeries: every method other packages call shows up in the text
// exposition under its documented name and labels.
func TestHooksExportTheirSeries(t *testing.T) {
	m := metrics.New(nil)
	m.ObserveRequest("GET", "/payments/{id}", 200, 3*time.Millisecond)
	m.IdempotencyOutcome("payments.create", "replayed")
	m.JobsQueued(metrics.QueueDepth{Queue: "default", State: "available", Jobs: 7, OldestDue: 3 * time.Second})
	m.JobsQueued(metrics.QueueDepth{Queue: "default", State: "scheduled", Jobs: 2, OldestDue: time.Hour}) // not due: no age
	m.WebhookDeliveryEnded("endpoint_disabled")
	m.JobRan("report", "succeeded", 2*time.Second)
	m.WebhookDelivered("failed", 150*time.Millisecond)
	m.RateLimitRefused("writes")
	m.RateLimitFellBack()

	var out bytes.Buffer
	if err := m.WriteText(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	for _, want := range []string{
		`http_request_duration_seconds_count{method="GET",route="/payments/{id}",status="200"} 1`,
		`http_request_duration_seconds_bucket{method="GET",route="/payments/{id}",status="200",le="0.005"} 1`,
		`idempotency_requests_total{operation="payments.create",outcome="replayed"} 1`,
		`jobs_queued{queue="default",state="available"} 7`,
		`jobs_queued{queue="default",state="scheduled"} 2`,
		`jobs_oldest_available_age_seconds{queue="default"} 3`,
		`webhook_deliveries_ended_total{outcome="endpoint_disabled"} 1`,
		`job_run_duration_seconds_count{kind="report",outcome="succeeded"} 1`,
		`webhook_delivery_duration_seconds_count{outcome="failed"} 1`,
		`ratelimit_refusals_total{policy="writes"} 1`,
		`ratelimit_fallbacks_total 1`,
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("missing line %q in\n%s", want, out.String())
		}
	}
}

// TestNilMetricsRecordNothing: packages may be built without metrics (in their own tests),
// so every recording method must accept a nil receiver.
func TestNilMetricsRecordNothing(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("a method panicked on nil *Metrics: %v", r)
		}
	}()
	var m *metrics.Metrics
	m.ObserveRequest("GET", "/", 200, time.Millisecond)
	m.IdempotencyOutcome("payments.create", "claimed")
	m.JobsQueued(metrics.QueueDepth{Queue: "default", State: "available", Jobs: 1})
	m.WebhookDeliveryEnded("succeeded")
	m.JobRan("report", "failed", time.Second)
	m.WebhookDelivered("succeeded", time.Millisecond)
	m.RateLimitRefused("default")
	m.RateLimitFellBack()
}

// TestNonStandardMethodsShareOneLabel: a client may send any token as a method, so every
// method outside the standard set is recorded as OTHER, not as a series of its own.
func TestNonStandardMethodsShareOneLabel(t *testing.T) {
	m := metrics.New(nil)
	for _, method := range []string{"XABC", "get", "BREW", "PATCH", "TRACE"} {
		m.ObserveRequest(method, "unmatched", 405, time.Millisecond)
	}
	var out bytes.Buffer
	if err := m.WriteText(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	var counts []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "http_request_duration_seconds_count{") {
			counts = append(counts, l)
		}
	}
	want := []string{
		`http_request_duration_seconds_count{method="OTHER",route="unmatched",status="405"} 3`,
		`http_request_duration_seconds_count{method="PATCH",route="unmatched",status="405"} 1`,
		`http_request_duration_seconds_count{method="TRACE",route="unmatched",status="405"} 1`,
	}
	if !slices.Equal(counts, want) {
		t.Errorf("request counts:\n%s\nwant:\n%s", strings.Join(counts, "\n"), strings.Join(want, "\n"))
	}
}
