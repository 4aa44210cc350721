package integration

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/redistest"
)

// TestRedisToxics breaks the path to the rate limits' Redis (connections reset, or
// swallowed until the client's timeout): requests are still served, at once or within the
// Redis timeout, with the limits counted in the process's memory; the switch is logged
// once each way, and the limits come from Redis again when the path heals.
func TestRedisToxics(t *testing.T) {
	t.Parallel()
	for _, toxic := range []string{"reset_peer", "timeout"} {
		t.Run(toxic, func(t *testing.T) {
			t.Parallel()
			redis := redistest.Start(t)
			proxy := newToxicProxy(t, strings.TrimSuffix(strings.TrimPrefix(redis.URL(), "redis://"), "/0"))
			r := startServer(t, map[string]string{"REDIS_URL": "redis://" + proxy.Addr() + "/0", "RATE_LIMIT_DEFAULT": "1000/1h"})

			for want := 999; want >= 990; want-- { // counted in Redis
				checkRemaining(t, r, want)
			}
			proxy.Add(toxic, "upstream", map[string]any{"timeout": 0})
			start := time.Now()
			for want := 999; want >= 997; want-- { // counted afresh in memory
				checkRemaining(t, r, want)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("three requests without Redis took %s", took)
			}
			if !r.Logged("rate limits: redis failed") {
				t.Error("the fallback to memory was not logged")
			}

			proxy.Remove()
			time.Sleep(1100 * time.Millisecond) // ratelimit's probe interval: the next request asks Redis
			checkRemaining(t, r, 989)           // Redis's count, not memory's 996
			if !r.Logged("rate limits: redis answers again") {
				t.Error("the return to Redis was not logged")
			}
		})
	}
}

var defaultRemaining = regexp.MustCompile(`"default";r=(\d+)`)

// remaining is the default quota's requests left after a GET /account that must succeed.
func remaining(t *testing.T, r *Server) int {
	t.Helper()
	res := send(t, r, http.MethodGet, "/account", "", "")
	if res.Status != http.StatusOK {
		t.Fatalf("GET /account: %d %s", res.Status, res.Body)
	}
	m := defaultRemaining.FindStringSubmatch(res.Header.Get("RateLimit"))
	if m == nil {
		t.Fatalf("GET /account: RateLimit %q has no default policy", res.Header.Get("RateLimit"))
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func checkRemaining(t *testing.T, r *Server, want int) {
	t.Helper()
	if got := remaining(t, r); got != want {
		t.Errorf("GET /account: %d requests left, want %d", got, want)
	}
}
