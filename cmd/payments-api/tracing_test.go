package main

import (
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/apitest"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// startTraced runs the server exporting its traces to a collector in the test, quickly.
func startTraced(t *testing.T, env map[string]string) (*running, *otlpReceiver) {
	t.Helper()
	collector := newOTLPReceiver(t)
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.URL
	env["OTEL_BSP_SCHEDULE_DELAY"] = "20" // milliseconds
	return startServe(t, env, true), collector
}

// A payment's trace: the request's span at its root, the phases Server-Timing names as its
// children, the statements beneath, and the payment's id to find it by; no secret anywhere.
func TestTracesOfAPayment(t *testing.T) {
	t.Parallel()
	srv, collector := startTraced(t, map[string]string{})
	c := apitest.NewClient(t, srv.base, testKey)
	res := c.Post("/payments", map[string]any{"amount": 5000, "currency": "usd", "payment_method": "pm_card_visa"},
		apitest.Header("Idempotency-Key", "traced-payment"))
	if res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	var p struct{ ID string }
	res.Decode(t, &p)

	root := waitForSpan(t, collector, func(s *tracepb.Span) bool { return s.GetName() == "POST /payments" })
	if len(root.GetParentSpanId()) != 0 {
		t.Errorf("the request span has a parent: it should be the root of its trace")
	}
	for key, want := range map[string]string{
		"http.request.method": "POST", "http.route": "/payments", "http.response.status_code": "201",
		"payment.id": p.ID, "request.id": res.Header.Get("Request-Id"),
	} {
		if got := attribute(root, key); got != want {
			t.Errorf("request span %s = %q, want %q", key, got, want)
		}
	}

	phases := []string{"auth", "claim", "charge", "commit"}
	var trace []*tracepb.Span
	eventually(func() bool { // the phases end before their parent, but may be exported after it
		trace = spansOfTrace(collector.Spans(), root.GetTraceId())
		return len(childrenNamed(trace, root, phases)) == len(phases) && len(statementsUnder(trace, root)) > 0
	})
	if got := childrenNamed(trace, root, phases); len(got) != len(phases) {
		t.Errorf("the request span's phase children are %v, want %v", got, phases)
	}
	if len(statementsUnder(trace, root)) == 0 {
		t.Errorf("no database statement span beneath the request span; trace: %v", names(trace))
	}
	noSecrets(t, collector.Spans(), testKey)
}

// A webhook delivery is a span of its own, in the trace of the job run that made it (itself
// linked to the request that enqueued it), and the receiver gets that span's traceparent.
func TestTracesOfAWebhookDelivery(t *testing.T) {
	t.Parallel()
	traceparents := make(chan string, 10)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		traceparents <- req.Header.Get("traceparent")
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	srv, collector := startTraced(t, map[string]string{"WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true"})
	c := apitest.NewClient(t, srv.base, testKey)
	// A token in the URL's path and query, as some receivers take one: the spans record
	// only the host and port.
	res := c.Post("/webhook-endpoints", map[string]any{"url": receiver.URL + "/hooks/pathtoken?token=querytoken", "enabled_events": []string{"payment.succeeded"}})
	if res.Status != http.StatusCreated {
		t.Fatalf("create endpoint: %d %s", res.Status, res.Body)
	}
	var endpoint struct{ ID, Secret string }
	res.Decode(t, &endpoint)
	body := map[string]any{"amount": 300, "currency": "usd", "payment_method": "pm_card_visa"}
	if res := c.Post("/payments", body, apitest.Header("Idempotency-Key", "traced-webhook")); res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}

	var traceparent string
	select {
	case traceparent = <-traceparents:
	case <-time.After(15 * time.Second):
		t.Fatal("no webhook delivered within 15s")
	}
	// version-traceid-spanid-flags (W3C Trace Context)
	parts := strings.Split(traceparent, "-")
	if len(parts) != 4 {
		t.Fatalf("traceparent = %q, want version-traceid-spanid-flags", traceparent)
	}
	delivery := waitForSpan(t, collector, func(s *tracepb.Span) bool { return s.GetName() == "webhook.attempt" })
	if got := hex.EncodeToString(delivery.GetTraceId()); got != parts[1] {
		t.Errorf("delivery span's trace id %s, the receiver's traceparent names %s", got, parts[1])
	}
	if got := hex.EncodeToString(delivery.GetSpanId()); got != parts[2] {
		t.Errorf("delivery span's id %s, the receiver's traceparent names %s", got, parts[2])
	}

	request := waitForSpan(t, collector, func(s *tracepb.Span) bool { return s.GetName() == "POST /payments" })
	run := waitForSpan(t, collector, func(s *tracepb.Span) bool { return slices.Equal(s.GetSpanId(), delivery.GetParentSpanId()) })
	linked := slices.ContainsFunc(run.GetLinks(), func(l *tracepb.Span_Link) bool { return slices.Equal(l.GetTraceId(), request.GetTraceId()) })
	if !linked {
		t.Errorf("the delivery's job run %q has no link to the trace of the request that enqueued it", run.GetName())
	}
	if host, port, _ := strings.Cut(strings.TrimPrefix(receiver.URL, "http://"), ":"); attribute(delivery, "server.address") != host || attribute(delivery, "server.port") != port {
		t.Errorf("delivery span to %s:%s, want %s", attribute(delivery, "server.address"), attribute(delivery, "server.port"), receiver.URL)
	}
	if attribute(delivery, "webhook.endpoint.id") != endpoint.ID || attribute(delivery, "webhook.attempt") != "1" {
		t.Errorf("delivery span of endpoint %q, attempt %q; want %s, 1", attribute(delivery, "webhook.endpoint.id"), attribute(delivery, "webhook.attempt"), endpoint.ID)
	}
	noSecrets(t, collector.Spans(), testKey, endpoint.Secret, "pathtoken", "querytoken")
}

// A retry more than a few seconds away is a job of its own, inserted by the run that made
// the failed attempt (webhooks.jobEnd): its run is linked to that run's trace, as the first
// run is linked to the request's, so the attempts of one delivery can be followed from the
// request through every retry.
func TestTracesOfAWebhookRetryLinkTheRunBefore(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	// 6 s, less its 10 % jitter, is still past the 5 s within which a retry is the same job.
	srv, collector := startTraced(t, map[string]string{"WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true", "WEBHOOK_RETRY_SCHEDULE": "6s"})
	c := apitest.NewClient(t, srv.base, testKey)
	res := c.Post("/webhook-endpoints", map[string]any{"url": receiver.URL, "enabled_events": []string{"payment.succeeded"}})
	if res.Status != http.StatusCreated {
		t.Fatalf("create endpoint: %d %s", res.Status, res.Body)
	}
	body := map[string]any{"amount": 300, "currency": "usd", "payment_method": "pm_card_visa"}
	if res := c.Post("/payments", body, apitest.Header("Idempotency-Key", "traced-retry")); res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}

	attempt := func(n string) *tracepb.Span {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			spans := collector.Spans()
			if i := slices.IndexFunc(spans, func(s *tracepb.Span) bool {
				return s.GetName() == "webhook.attempt" && attribute(s, "webhook.attempt") == n
			}); i >= 0 {
				return spans[i]
			}
		}
		t.Fatalf("no span of attempt %s within 30s; received: %v", n, names(collector.Spans()))
		return nil
	}
	first, second := attempt("1"), attempt("2")
	if slices.Equal(first.GetTraceId(), second.GetTraceId()) {
		t.Fatalf("both attempts are in one trace: the retry ran as the same job, not one of its own")
	}
	run := waitForSpan(t, collector, func(s *tracepb.Span) bool { return slices.Equal(s.GetSpanId(), second.GetParentSpanId()) })
	linked := slices.ContainsFunc(run.GetLinks(), func(l *tracepb.Span_Link) bool { return slices.Equal(l.GetTraceId(), first.GetTraceId()) })
	if !linked {
		t.Errorf("the retry's run %q has no link to the trace of the run before it", run.GetName())
	}
}

// waitForSpan is the first span received that matches, failing t after 10 s without one.
func waitForSpan(t *testing.T, collector *otlpReceiver, match func(*tracepb.Span) bool) *tracepb.Span {
	t.Helper()
	var found *tracepb.Span
	if !eventually(func() bool {
		spans := collector.Spans()
		if i := slices.IndexFunc(spans, match); i >= 0 {
			found = spans[i]
		}
		return found != nil
	}) {
		t.Fatalf("no matching span received; received: %v", names(collector.Spans()))
	}
	return found
}

// eventually reports whether cond held within 10 s, polling: spans arrive in batches.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

func spansOfTrace(spans []*tracepb.Span, traceID []byte) []*tracepb.Span {
	return slices.DeleteFunc(spans, func(s *tracepb.Span) bool { return !slices.Equal(s.GetTraceId(), traceID) })
}

// childrenNamed is which of names are the names of parent's children in trace.
func childrenNamed(trace []*tracepb.Span, parent *tracepb.Span, names []string) []string {
	var found []string
	for _, s := range trace {
		if slices.Equal(s.GetParentSpanId(), parent.GetSpanId()) && slices.Contains(names, s.GetName()) && !slices.Contains(found, s.GetName()) {
			found = append(found, s.GetName())
		}
	}
	return found
}

// statementsUnder is the database statements' spans beneath root, at any depth.
func statementsUnder(trace []*tracepb.Span, root *tracepb.Span) []*tracepb.Span {
	byID := map[string]*tracepb.Span{}
	for _, s := range trace {
		byID[string(s.GetSpanId())] = s
	}
	var found []*tracepb.Span
	for _, s := range trace {
		if attribute(s, "db.system.name") != "postgresql" || attribute(s, "db.query.text") == "" {
			continue
		}
		for p := byID[string(s.GetParentSpanId())]; p != nil; p = byID[string(p.GetParentSpanId())] {
			if p == root {
				found = append(found, s)
				break
			}
		}
	}
	return found
}

// attribute is the value of the span's attribute key, as text; "" when it has none.
func attribute(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			if v, ok := kv.GetValue().GetValue().(*commonpb.AnyValue_IntValue); ok {
				return strconv.FormatInt(v.IntValue, 10)
			}
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// noSecrets fails t when a span carries a secret, or the Authorization header's scheme, in
// any attribute, event or link.
func noSecrets(t *testing.T, spans []*tracepb.Span, secrets ...string) {
	t.Helper()
	secrets = append(secrets, "Bearer", "whsec_")
	for _, s := range spans {
		text := s.String()
		for _, secret := range secrets {
			if secret != "" && strings.Contains(text, secret) {
				t.Errorf("span %q carries %q", s.GetName(), secret)
			}
		}
	}
}

func names(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.GetName())
	}
	return out
}
