package handlers_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// BenchmarkFirstAttemptLatency measures, per event, the time from a payment's answer (its
// transaction has committed) to its webhook's arrival at a receiver: River's notification,
// fetch and the first attempt. Run it with -benchtime=50x for a median over 50 events:
//
//	go test ./internal/handlers -run '^$' -bench FirstAttemptLatency -benchtime=50x
func BenchmarkFirstAttemptLatency(b *testing.B) {
	bundle := setupDelivery(b, defaultDelivery)
	url, got := newReceiver(b, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	res := bundle.client.Post("/webhook-endpoints", map[string]any{"url": url, "enabled_events": []string{"payment.succeeded"}})
	if res.Status != http.StatusCreated {
		b.Fatalf("create endpoint: %d %s", res.Status, res.Body)
	}
	latencies := make([]time.Duration, 0, b.N)
	for b.Loop() {
		res := bundle.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()))
		if res.Status != http.StatusCreated {
			b.Fatalf("create payment: %d %s", res.Status, res.Body)
		}
		committed := time.Now()
		select {
		case h := <-got:
			latencies = append(latencies, h.at.Sub(committed))
		case <-time.After(5 * time.Second):
			b.Fatal("no webhook within 5 s")
		}
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(latencies[len(latencies)*9/10].Microseconds())/1000, "ms-p90")
	b.ReportMetric(float64(latencies[len(latencies)-1].Microseconds())/1000, "ms-max")
}
