package handlers_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// TestAFreshCreateRoundTrips counts the round trips a fresh POST /payments makes to the
// database, from its statements' spans. There are two: BEGIN goes with the idempotency key's
// lock, its row and the lookup of the webhook endpoints its event may fan out to (db.Ahead),
// and the payment, its event and the key's row with the answer go with COMMIT
// (db.Tx.Later). A naive server sends its statements in six (cmd/payments-load/minimal).
func TestAFreshCreateRoundTrips(t *testing.T) {
	t.Parallel()
	b, spans := setupCounted(t)
	body := map[string]any{"amount": 1000, "currency": "usd", "payment_method": "pm_card_visa"}
	if res := b.client.Post("/payments", body, apitest.Header("Idempotency-Key", newKey())); res.Status != http.StatusCreated {
		t.Fatalf("first create: %d %s", res.Status, res.Body)
	}

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	res := b.client.Post("/payments", body, apitest.Header("Idempotency-Key", newKey()),
		apitest.Header("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01"))
	if res.Status != http.StatusCreated {
		t.Fatalf("counted create: %d %s", res.Status, res.Body)
	}
	want := []string{
		"batch [BEGIN, IdempotencyKeyLock, IdempotencyKeyGet, WebhookEndpointListSubscribedAny]",
		"batch [PaymentInsert, EventInsert, IdempotencyKeyInsert, COMMIT]",
	}
	if got := roundTrips(spans.Ended(), traceID); strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("a fresh create's round trips:\n got %d: %s\nwant %d: %s", len(got), strings.Join(got, "; "), len(want), strings.Join(want, "; "))
	}
}

// TestAGetRoundTrips: a GET the server is not busy with is one statement, sent alone under
// the request's context, so it is part of the request's trace (docs/tracing.md): the plain
// lookup of the payment's row for a 200, of its version alone for a 304.
func TestAGetRoundTrips(t *testing.T) {
	t.Parallel()
	b, spans := setupCounted(t)
	p, etag := createPayment(t, b.client, 1000)
	b.client.Get("/payments/" + p.ID) // prepares the statements
	b.client.Get("/payments/"+p.ID, apitest.Header("If-None-Match", etag))

	for _, c := range []struct {
		traceID, ifNoneMatch string
		status               int
		want                 string
	}{
		{"4bf92f3577b34da6a3ce929d0e0e4737", "", http.StatusOK, "PaymentGetByID"},
		{"4bf92f3577b34da6a3ce929d0e0e4738", etag, http.StatusNotModified, "PaymentVersion"},
	} {
		opts := []apitest.Option{apitest.Header("traceparent", "00-"+c.traceID+"-00f067aa0ba902b7-01")}
		if c.ifNoneMatch != "" {
			opts = append(opts, apitest.Header("If-None-Match", c.ifNoneMatch))
		}
		if res := b.client.Get("/payments/"+p.ID, opts...); res.Status != c.status {
			t.Fatalf("GET (If-None-Match %q): %d, want %d", c.ifNoneMatch, res.Status, c.status)
		}
		if got := roundTrips(spans.Ended(), c.traceID); strings.Join(got, "; ") != c.want {
			t.Errorf("a GET's round trips (If-None-Match %q): %v, want [%s]", c.ifNoneMatch, got, c.want)
		}
	}
}

// setupCounted is setup with every span recorded, for roundTrips, and one connection to the
// database: counted work runs where the work before it prepared every statement.
func setupCounted(t *testing.T) (*testBundle, *tracetest.SpanRecorder) {
	t.Helper()
	return setupTraced(t, withConfig(func(c *app.Config) { c.DatabaseURL = dbtest.NewURL(t) + "&pool_max_conns=1" }))
}

// roundTrips names the round trips to the database among a trace's spans, in the order they
// started: a statement by its name, a batch by its statements'. Taking a connection from the
// pool is not one.
func roundTrips(spans []sdktrace.ReadOnlySpan, traceID string) []string {
	const otelpgx = "github.com/exaring/otelpgx"
	inBatch := map[oteltrace.SpanID][]string{}
	var trips []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanContext().TraceID().String() != traceID || s.InstrumentationScope().Name != otelpgx {
			continue
		}
		switch s.Name() {
		case "pool.acquire", "connect":
			continue
		}
		trips = append(trips, s)
	}
	batches := map[oteltrace.SpanID]bool{}
	for _, s := range trips {
		if s.Name() == "batch start" {
			batches[s.SpanContext().SpanID()] = true
		}
	}
	var starts []sdktrace.ReadOnlySpan
	for _, s := range trips {
		if parent := s.Parent().SpanID(); batches[parent] {
			inBatch[parent] = append(inBatch[parent], s.Name())
			continue
		}
		starts = append(starts, s)
	}
	// Ended() lists spans as they ended; a batch ends after its statements.
	slices.SortFunc(starts, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	names := make([]string, len(starts))
	for i, s := range starts {
		names[i] = s.Name()
		if batches[s.SpanContext().SpanID()] {
			names[i] = fmt.Sprintf("batch [%s]", strings.Join(inBatch[s.SpanContext().SpanID()], ", "))
		}
	}
	return names
}
