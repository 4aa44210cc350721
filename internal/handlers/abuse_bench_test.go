package handlers_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// BenchmarkGetUnderAbuse times ordinary GET /payments/{id} requests, one at a time, while 0 or
// 4 other clients send the costliest bodies known (hostileBodies, plus 1 MiB variants) as fast
// as the server answers them. Compare ms/get-p99 of the two runs: hostile bodies must cost
// their senders, not everyone.
func BenchmarkGetUnderAbuse(b *testing.B) {
	for _, attackers := range []int{0, 4} {
		b.Run(map[int]string{0: "quiet", 4: "4-attackers"}[attackers], func(b *testing.B) {
			s := setupBench(b, processor.Simulated{})
			id := s.createdID(b)
			ctx, stop := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			bodies := worstBodies()
			var attacks atomic.Int64
			for i := range attackers {
				wg.Go(func() {
					for n := i; ctx.Err() == nil; n++ {
						s.attack(ctx, bodies[n%len(bodies)])
						attacks.Add(1)
					}
				})
			}
			latencies := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				if status, err := s.get(context.Background(), "/payments/"+id); err != nil || status != http.StatusOK {
					b.Fatalf("GET: %d %v", status, err)
				}
				latencies = append(latencies, time.Since(start))
			}
			b.StopTimer()
			stop()
			wg.Wait()
			slices.Sort(latencies)
			b.ReportMetric(millis(percentile(latencies, 0.50)), "ms/get-p50")
			b.ReportMetric(millis(percentile(latencies, 0.99)), "ms/get-p99")
			b.ReportMetric(float64(attacks.Load())/b.Elapsed().Seconds(), "attacks/s")
		})
	}
}

// worstBodies are hostileBodies plus the 1 MiB bodies that cost the most per byte.
func worstBodies() [][]byte {
	valid := `"amount":100,"currency":"usd","payment_method":"pm_card_visa"`
	worst := [][]byte{
		[]byte(`{` + valid + `,"metadata":` + members(20000, 45) + `}`),                      // ~1 MiB of bad names
		[]byte(`{` + valid + `,"description":"` + strings.Repeat("x", 1000000) + `\u0000"}`), // NUL at the very end
	}
	for _, body := range hostileBodies() {
		worst = append(worst, []byte(body))
	}
	return worst
}

func (s *benchServer) createdID(b *testing.B) string {
	b.Helper()
	res := s.client.Post("/payments", benchBody, apitest.Header("Idempotency-Key", newKey()))
	var p payment
	res.Decode(b, &p)
	return p.ID
}

// attack sends one hostile body; its answer (a 400 or 413) does not matter here.
func (s *benchServer) attack(ctx context.Context, body []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/payments", bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", newKey())
	res, err := s.http.Do(req)
	if err != nil {
		return
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
}
