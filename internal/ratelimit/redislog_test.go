package ratelimit

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/redistest"
)

// go-redis logs a failed dial on its own; those lines must arrive as structured records, not
// as plain text on stderr. (go-redis has one logger per process: this test sets it, as the
// server does at start-up, and no other test in this package depends on it.)
func TestRedisLogsGoThroughSlog(t *testing.T) {
	var logs syncBuffer
	LogRedisThrough(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	srv := redistest.Start(t)
	r, err := NewRedis(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv.Stop()
	p := Policy{Name: "default", Rate: Rate{Quota: 10, Window: time.Second}}
	for range 3 {
		if _, err := r.Allow(context.Background(), p, "acct_a"); err == nil {
			t.Fatal("Allow succeeded with Redis stopped")
		}
	}
	got := logs.String()
	if !strings.Contains(got, `"level":"DEBUG","msg":"redis: `) {
		t.Errorf("go-redis's own log lines did not reach slog at debug level:\n%s", got)
	}
}
