package webhooks_test

import (
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/webhooks"
)

func TestDefaultScheduleIsStandardWebhooks(t *testing.T) {
	want := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
		5 * time.Hour, 10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour}
	if len(webhooks.DefaultSchedule) != len(want) {
		t.Fatalf("%d retries, want %d", len(webhooks.DefaultSchedule), len(want))
	}
	now := time.Now()
	for i, d := range want {
		next, ok := webhooks.DefaultSchedule.Next(now, i+1, 0)
		lo, hi := now.Add(d-d/10), now.Add(d+d/10)
		if !ok || next.Before(lo) || next.After(hi) {
			t.Errorf("after attempt %d: %s from now (ok %v), want %s ±10%%", i+1, next.Sub(now), ok, d)
		}
	}
	if _, ok := webhooks.DefaultSchedule.Next(now, len(want)+1, 0); ok {
		t.Error("a retry after the schedule is used up")
	}
}

func TestScheduleJittersAndHonoursRetryAfter(t *testing.T) {
	s := webhooks.Schedule{time.Hour}
	now := time.Now()
	seen := map[time.Time]bool{}
	for range 20 {
		next, _ := s.Next(now, 1, 0)
		seen[next] = true
	}
	if len(seen) < 2 {
		t.Error("no jitter: every retry at the same instant")
	}
	next, _ := s.Next(now, 1, 3*time.Hour)
	if next.Before(now.Add(3 * time.Hour)) {
		t.Errorf("Retry-After of 3h ignored: next in %s", next.Sub(now))
	}
}
