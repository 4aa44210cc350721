package handlers

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/ratelimit"
)

// TestASharedLookupThatFailsIsNotTriedAgain: requests that shared a key lookup which failed
// by itself (the database's connect timeout is a context.DeadlineExceeded while every
// request is still waiting) share its failure. Only the lookup of a request that went away is
// tried again by the others; a failure tried again by each would queue them one behind the
// other, a timeout apiece. The lookup is held until every request waits for it.
func TestASharedLookupThatFailsIsNotTriedAgain(t *testing.T) {
	const n = 5
	rate, _ := ratelimit.ParseRate("30/10s")
	l := newRateLimiter(ratelimit.Limits{
		Limiter:         ratelimit.NewMemory(),
		Unauthenticated: ratelimit.Policy{Name: "unauthenticated", Rate: rate},
	}, nil)
	e := echo.New()
	e.IPExtractor = echo.ExtractIPDirect()

	var lookups atomic.Int32
	release := make(chan struct{})
	find := func(context.Context, string) (db.Account, error) {
		lookups.Add(1)
		<-release
		return db.Account{}, fmt.Errorf("failed to connect: %w", context.DeadlineExceeded)
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/account", nil)
			req.RemoteAddr = "192.0.2.7:1234"
			if _, err := l.lookUpKey(e.NewContext(req, httptest.NewRecorder()), "sk_test_key", find); err == nil {
				t.Error("a failed lookup answered an account")
			}
		})
	}
	waitForSharers(t, n)
	close(release)
	wg.Wait()
	if got := lookups.Load(); got != 1 {
		t.Errorf("%d lookups for %d requests that shared one that failed, want 1", got, n)
	}
}

// waitForSharers waits until n goroutines are inside a singleflight call: the one that makes
// it and those that wait for it.
func waitForSharers(t *testing.T, n int) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if bytes.Count(buf[:runtime.Stack(buf, true)], []byte("singleflight.(*Group).Do(")) >= n {
			return
		}
	}
	t.Fatalf("fewer than %d requests share the lookup after 10s", n)
}
