package ratelimit

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/redistest"
)

var benchPolicy = Policy{Name: "default", Rate: Rate{Quota: 1_000_000_000 / 1000, Window: time.Second}}

// BenchmarkMemoryAllow is the in-memory limiter's cost per request, from parallel clients
// spread over 10,000 accounts.
func BenchmarkMemoryAllow(b *testing.B) {
	benchAllow(b, NewMemory())
}

// BenchmarkRedisAllow is one decision in Redis on this host: the script's round trip.
func BenchmarkRedisAllow(b *testing.B) {
	r, err := NewRedis(redistest.Start(b).URL())
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	benchAllow(b, r)
}

func benchAllow(b *testing.B, l Limiter) {
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = "acct_" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := l.Allow(context.Background(), benchPolicy, keys[i%len(keys)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// BenchmarkMemory100kKeys reports the heap the in-memory limiter holds for 100,000 distinct
// keys (each one request in, so none is idle yet), key strings included: each is a fresh
// copy, as a request's account id would be.
func BenchmarkMemory100kKeys(b *testing.B) {
	const n = 100_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("acct_%024d", i) // as long as a real account id
	}
	var held uint64
	for range b.N {
		before := heapInUse()
		m := NewMemory()
		for _, k := range keys {
			spend(m, benchPolicy, strings.Clone(k))
		}
		held = heapInUse() - before
		if m.Len() != n {
			b.Fatalf("%d keys held, want %d", m.Len(), n)
		}
		runtime.KeepAlive(m)
	}
	b.ReportMetric(float64(held)/(1<<20), "MiB/100k-keys")
	b.ReportMetric(float64(held)/n, "B/key")
}

func heapInUse() uint64 {
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return s.HeapInuse
}
