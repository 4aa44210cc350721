package handlers_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// benchParallelism is how many clients RunParallel starts per CPU: several, so the server is
// measured busy rather than waiting on one client's round trips.
const benchParallelism = 4

var benchBody = []byte(`{"amount":2500,"currency":"usd","payment_method":"pm_card_visa"}`)

// benchServer is the real server on a fresh database, as setup builds it. Its log is discarded (a buffer would grow with b.N), and the timed loops use a
// plain HTTP client with enough idle connections for RunParallel, so they measure the server
// and not the contract check that client (an apitest.Client) makes on every response.
type benchServer struct {
	client *apitest.Client
	url    string
	http   *http.Client
	pool   *pgxpool.Pool
}

func setupBench(tb testing.TB, proc processor.Processor) *benchServer {
	tb.Helper()
	b := setup(tb, withProcessor(proc), withLogger(slog.New(slog.DiscardHandler)))
	transport := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	tb.Cleanup(transport.CloseIdleConnections)
	return &benchServer{
		client: b.client,
		url:    b.client.BaseURL,
		http:   &http.Client{Transport: transport, Timeout: 10 * time.Second},
		pool:   b.pool,
	}
}

// post sends POST /payments and reports the status and whether the answer was a replay.
func (s *benchServer) post(ctx context.Context, key string) (status int, replayed bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/payments", bytes.NewReader(benchBody))
	if err != nil {
		return 0, false, err
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	res, err := s.http.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return res.StatusCode, res.Header.Get("Idempotent-Replayed") == "true", err
}

// payments counts the payment rows, to check what the timed requests did.
func (s *benchServer) payments(tb testing.TB) int {
	tb.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM payments`).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// BenchmarkCreatePaymentFresh measures new payments: each request claims a new key, charges,
// and commits the payment, its event and the stored response.
func BenchmarkCreatePaymentFresh(b *testing.B) {
	s := setupBench(b, processor.Simulated{})
	var failed atomic.Int64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if status, replayed, err := s.post(context.Background(), newKey()); err != nil || status != http.StatusCreated || replayed {
				failed.Add(1)
			}
		}
	})
	b.StopTimer()
	reportRate(b)
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d requests did not create a payment", n, b.N)
	}
	if got := s.payments(b); got != b.N {
		b.Fatalf("%d payments after %d requests with new keys", got, b.N)
	}
}

// BenchmarkCreatePaymentReplay measures retries of completed requests: each finds its key
// done and answers the stored response.
//
// one-key is every client retrying the same key. Each replay holds the key's advisory lock for
// its transaction, so concurrent replays of one key can answer 409 as if it were in flight;
// 409s/op reports how many did. key-per-client gives each client its own completed key, so
// it measures the replay itself.
func BenchmarkCreatePaymentReplay(b *testing.B) {
	b.Run("one-key", func(b *testing.B) {
		s := setupBench(b, processor.Simulated{})
		key := s.complete(b)
		benchReplays(b, s, func() string { return key })
	})
	b.Run("key-per-client", func(b *testing.B) {
		s := setupBench(b, processor.Simulated{})
		keys := make([]string, benchParallelism*runtime.GOMAXPROCS(0)) // one per RunParallel goroutine
		for i := range keys {
			keys[i] = s.complete(b)
		}
		var next atomic.Int64
		benchReplays(b, s, func() string { return keys[next.Add(1)-1] })
	})
}

// complete creates a payment with a new key and returns the key.
func (s *benchServer) complete(b *testing.B) string {
	b.Helper()
	key := newKey()
	if res := s.client.Post("/payments", benchBody, apitest.Header("Idempotency-Key", key)); res.Status != http.StatusCreated {
		b.Fatalf("create: %d %s", res.Status, res.Body)
	}
	return key
}

// benchReplays retries completed keys in parallel; clientKey picks each client's key.
func benchReplays(b *testing.B, s *benchServer, clientKey func() string) {
	before := s.payments(b)
	var conflicts, failed atomic.Int64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := clientKey()
		for pb.Next() {
			status, replayed, err := s.post(context.Background(), key)
			switch {
			case err == nil && status == http.StatusCreated && replayed:
			case err == nil && status == http.StatusConflict:
				conflicts.Add(1)
			default:
				failed.Add(1)
			}
		}
	})
	b.StopTimer()
	reportRate(b)
	b.ReportMetric(float64(b.N-int(conflicts.Load()))/b.Elapsed().Seconds(), "replays/s")
	b.ReportMetric(float64(conflicts.Load())/float64(b.N), "409s/op")
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d retries were neither a replay nor a 409", n, b.N)
	}
	if got := s.payments(b); got != before {
		b.Fatalf("retries created %d payments", got-before)
	}
}

// BenchmarkInFlight409 holds a first request inside its transaction (its charge blocks) and
// times retries one at a time: each must answer 409 at once, without waiting for the first.
func BenchmarkInFlight409(b *testing.B) {
	gate := newGatedProcessor()
	s := setupBench(b, gate)
	b.Cleanup(gate.open) // runs before the server's Close, which waits for the held request

	key := newKey()
	first := make(chan int, 1)
	go func() {
		status, _, _ := s.post(context.Background(), key)
		first <- status
	}()
	gate.waitCharging(b)
	if res := s.client.Post("/payments", benchBody, apitest.Header("Idempotency-Key", key)); res.Status != http.StatusConflict {
		b.Fatalf("retry while in flight: %d %s, want 409", res.Status, res.Body)
	}

	latencies := make([]time.Duration, 0, b.N)
	var failed int
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		status, _, err := s.post(context.Background(), key)
		latencies = append(latencies, time.Since(start))
		if err != nil || status != http.StatusConflict {
			failed++
		}
	}
	b.StopTimer()

	gate.open()
	if status := <-first; status != http.StatusCreated {
		b.Errorf("first request: %d, want 201", status)
	}
	if failed > 0 {
		b.Fatalf("%d of %d retries were not 409", failed, b.N)
	}
	slices.Sort(latencies)
	b.ReportMetric(millis(percentile(latencies, 0.50)), "ms/409-median")
	b.ReportMetric(millis(percentile(latencies, 0.99)), "ms/409-p99")
}

// BenchmarkGetPayment measures reads of one payment: authentication, validation, one
// primary-key select and the ETag. Every client reads the same payment.
func BenchmarkGetPayment(b *testing.B) {
	s := setupBench(b, processor.Simulated{})
	res := s.client.Post("/payments", benchBody, apitest.Header("Idempotency-Key", newKey()))
	if res.Status != http.StatusCreated {
		b.Fatalf("create: %d %s", res.Status, res.Body)
	}
	var p struct{ ID string }
	res.Decode(b, &p)
	var failed atomic.Int64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if status, err := s.get(context.Background(), "/payments/"+p.ID); err != nil || status != http.StatusOK {
				failed.Add(1)
			}
		}
	})
	b.StopTimer()
	reportRate(b)
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d reads failed", n, b.N)
	}
}

// get sends an authenticated GET and reports the status.
func (s *benchServer) get(ctx context.Context, path string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	res, err := s.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return res.StatusCode, err
}

// reportRate adds requests per second, the throughput RunParallel's ns/op hides.
func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p * float64(len(sorted))))
	return sorted[max(rank-1, 0)]
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkGetPaymentServeHTTP sends GET /payments/{id} (200, and 304 with If-None-Match)
// through the whole server in process, without sockets: every middleware, validation, the
// query, the encoding and the request log's line (at info, written to nowhere). Its allocs/op
// is the server's own allocation per read, which the collector pays for under load
// (docs/performance.md).
func BenchmarkGetPaymentServeHTTP(b *testing.B) {
	bundle := setup(b, withLogger(slog.New(slog.NewJSONHandler(io.Discard, nil))))
	e := bundle.echo
	res := bundle.client.Post("/payments", benchBody, apitest.Header("Idempotency-Key", newKey()))
	if res.Status != http.StatusCreated {
		b.Fatalf("create: %d %s", res.Status, res.Body)
	}
	var p struct{ ID string }
	res.Decode(b, &p)
	for _, bb := range []struct {
		name        string
		ifNoneMatch string
		want        int
	}{
		{"200", "", http.StatusOK},
		{"304", res.Header.Get("ETag"), http.StatusNotModified},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/payments/"+p.ID, nil)
				req.Header.Set("Authorization", "Bearer "+testKey)
				if bb.ifNoneMatch != "" {
					req.Header.Set("If-None-Match", bb.ifNoneMatch)
				}
				rec := httptest.NewRecorder()
				e.ServeHTTP(rec, req)
				if rec.Code != bb.want {
					b.Fatalf("status %d, want %d: %s", rec.Code, bb.want, rec.Body)
				}
			}
		})
	}
}
