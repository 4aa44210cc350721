package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/testing/apitest"
	"go.opentelemetry.io/otel/codes"
)

// TestClientThatLeavesIsLoggedAsGone: a client that disconnects while its payment is being
// charged is recorded as what it is, status 499, and not as a failure of ours: in the log,
// with client_gone and not as an error, in the metrics and in its span.
func TestClientThatLeavesIsLoggedAsGone(t *testing.T) {
	t.Parallel()
	b, spans := setupTraced(t, withProcessor(processor.Simulated{Latency: time.Minute}))
	ctx, leave := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.client.BaseURL+"/payments",
		strings.NewReader(`{"amount":100,"currency":"usd","payment_method":"pm_card_visa"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", newKey())
	req.Header.Set("Request-Id", "client-leaves-1")
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		if res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req); err == nil {
			res.Body.Close()
		}
	}()
	// The charge runs inside the transaction that holds the key's advisory lock.
	waitUntil(t, func() bool {
		return b.count(t, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`) > 0
	})
	leave()
	<-sent

	line := logLine(t, b, "client-leaves-1")
	if line["status"] != float64(499) || line["client_gone"] != true || line["level"] != "INFO" {
		t.Errorf("request logged as %v, want status 499 with client_gone", line)
	}
	if strings.Contains(b.logs.String(), `"level":"ERROR"`) {
		t.Errorf("a client leaving was logged as an error:\n%s", b.logs.String())
	}
	metrics := strings.Split(string(b.client.Get("/metrics", apitest.NoAuth()).Body), "\n")
	if want := `http_request_duration_seconds_count{method="POST",route="/payments",status="499"} 1`; !slices.Contains(metrics, want) {
		t.Errorf("GET /metrics lacks %q", want)
	}
	span := requestSpan(t, spans, "client-leaves-1")
	if got := spanAttribute(span, "http.response.status_code"); got != "499" || span.Status().Code != codes.Unset {
		t.Errorf("span with status code %s and status %v, want 499 and unset", got, span.Status().Code)
	}
}

// logLine is the log line of the request with the Request-Id id, decoded, once written.
func logLine(t *testing.T, b *testBundle, id string) map[string]any {
	t.Helper()
	var line map[string]any
	waitUntil(t, func() bool {
		for _, l := range strings.Split(b.logs.String(), "\n") {
			if strings.Contains(l, `"msg":"request"`) && strings.Contains(l, `"request_id":"`+id+`"`) {
				return json.Unmarshal([]byte(l), &line) == nil
			}
		}
		return false
	})
	return line
}

// TestJSONBodiesEndWithANewline: a created payment, its replay, a read of it and a problem
// are all encoded alike, ending with one newline.
func TestJSONBodiesEndWithANewline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := apitest.Header("Idempotency-Key", newKey())
	created := b.client.Post("/payments", visa(100), key)
	var p payment
	created.Decode(t, &p)
	bodies := map[string]*apitest.Response{
		"created":  created,
		"replayed": b.client.Post("/payments", visa(100), key),
		"read":     b.client.Get("/payments/" + p.ID),
		"listed":   b.client.Get("/payments"),
		"declined": b.client.Post("/payments", map[string]any{"amount": 100, "currency": "usd", "payment_method": processor.CardDeclined},
			apitest.Header("Idempotency-Key", newKey())),
		"problem": b.client.Get("/payments/pay_nosuchpayment"),
	}
	for name, res := range bodies {
		if !bytes.HasSuffix(res.Body, []byte("}\n")) || bytes.HasSuffix(res.Body, []byte("\n\n")) {
			t.Errorf("%s body does not end with exactly one newline: %q", name, res.Body)
		}
	}
	if !bytes.Equal(created.Body, bodies["replayed"].Body) || !bytes.Equal(created.Body, bodies["read"].Body) {
		t.Errorf("created, replayed and read bodies differ:\n%s%s%s", created.Body, bodies["replayed"].Body, bodies["read"].Body)
	}
}

// waitUntil polls cond for up to 10 seconds.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 10s")
}

// TestARequestWhoseBodyArrivedIsServedWhileDraining: once the server starts shutting down it
// stops waiting for bodies still arriving, but a request whose body has arrived whole is in
// flight, and in-flight requests finish: its payment is made and answered 201, not a 503
// telling the client to send it again.
func TestARequestWhoseBodyArrivedIsServedWhileDraining(t *testing.T) {
	t.Parallel()
	draining, drain := context.WithCancel(context.Background())
	b := setup(t, withDraining(draining))
	drain() // SIGTERM, before the request reaches the body
	res := b.client.Post("/payments", visa(800), apitest.Header("Idempotency-Key", newKey()))
	if res.Status != http.StatusCreated {
		t.Fatalf("a whole body while draining: %d %s, want 201", res.Status, res.Body)
	}
	if n := b.count(t, `SELECT count(*) FROM payments`); n != 1 {
		t.Fatalf("%d payments, want 1", n)
	}
}
