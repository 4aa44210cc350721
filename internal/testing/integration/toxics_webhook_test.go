package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// TestWebhookReceiverToxics breaks the path from the webhook sender to a receiver that
// answers 200: a delivery attempt that meets the toxic is recorded as failed with the
// contract's fixed reason and no status, and the delivery is retried; once the path heals,
// the retry succeeds.
func TestWebhookReceiverToxics(t *testing.T) {
	t.Parallel()
	const webhookTimeout = 500 * time.Millisecond
	for _, tc := range []struct {
		name, kind, stream string
		attrs              map[string]any
		reason             string
	}{
		// The receiver answers four times later than the sender waits.
		{"latency beyond WEBHOOK_TIMEOUT", "latency", "downstream", map[string]any{"latency": 4 * webhookTimeout.Milliseconds()}, "timed out"},
		{"reset_peer", "reset_peer", "upstream", map[string]any{"timeout": 0}, "the connection closed before a response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
			t.Cleanup(receiver.Close)
			proxy := newToxicProxy(t, strings.TrimPrefix(receiver.URL, "http://"))
			r := startServer(t, map[string]string{
				"WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
				"WEBHOOK_TIMEOUT":                webhookTimeout.String(),
				"WEBHOOK_RETRY_SCHEDULE":         "1s,1s",
			})
			client := apitest.NewClient(t, r.Base, testKey)
			var endpoint struct{ ID string }
			client.Post("/webhook-endpoints", map[string]any{"url": "http://" + proxy.Addr() + "/hook", "enabled_events": []string{"payment.succeeded"}}).Decode(t, &endpoint)

			proxy.Add(tc.kind, tc.stream, tc.attrs)
			client.Post("/payments", map[string]any{"amount": 100, "currency": "usd", "payment_method": "pm_card_visa"}, apitest.Header("Idempotency-Key", "webhook-toxic"))
			first := waitForDelivery(t, client, endpoint.ID, func(d webhookDelivery) bool { return len(d.Attempts) >= 1 })
			if a := first.Attempts[0]; a.ResponseStatus != nil || a.Error == nil || *a.Error != tc.reason {
				t.Errorf("the attempt through %s: %s, want no status and %q", tc.kind, a, tc.reason)
			}
			if first.Status != "pending" || first.NextAttemptAt == nil {
				t.Errorf("after a failed attempt the delivery is %s, next attempt at %v: want it pending a retry", first.Status, first.NextAttemptAt)
			}

			proxy.Remove()
			done := waitForDelivery(t, client, endpoint.ID, func(d webhookDelivery) bool { return d.Status != "pending" })
			last := done.Attempts[len(done.Attempts)-1]
			if done.Status != "succeeded" || last.ResponseStatus == nil || *last.ResponseStatus != http.StatusOK || last.Error != nil {
				t.Errorf("after the path healed: %s, last attempt %s, want succeeded with 200", done.Status, last)
			}
		})
	}
}

type webhookDelivery struct {
	Status        string
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	Attempts      []webhookAttempt
}

type webhookAttempt struct {
	ResponseStatus *int    `json:"response_status"`
	Error          *string `json:"error"`
}

func (a webhookAttempt) String() string {
	status, reason := "no status", "no error"
	if a.ResponseStatus != nil {
		status = fmt.Sprint("status ", *a.ResponseStatus)
	}
	if a.Error != nil {
		reason = fmt.Sprintf("error %q", *a.Error)
	}
	return status + ", " + reason
}

// waitForDelivery polls the endpoint's only delivery until done holds, for at most 15 s.
func waitForDelivery(t *testing.T, client *apitest.Client, endpointID string, done func(webhookDelivery) bool) webhookDelivery {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var page struct{ Data []webhookDelivery }
		client.Get("/webhook-endpoints/"+endpointID+"/deliveries").Decode(t, &page)
		if len(page.Data) == 1 && done(page.Data[0]) {
			return page.Data[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delivery did not get there within 15 s: %+v", page.Data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
