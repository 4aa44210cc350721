package ratelimit

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/redistest"
)

func TestParseRate(t *testing.T) {
	good := map[string]Rate{
		"100/1s": {100, time.Second},
		"25/1s":  {25, time.Second},
		"20/1m":  {20, time.Minute},
		"1/24h":  {1, 24 * time.Hour},
	}
	for in, want := range good {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "100", "100/", "/1s", "0/1s", "-1/1s", "x/1s", "100/0s", "100/500ms", "100/1.5s", "100/48h", "100/s", "2000000/1s"} {
		if r, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) = %v, want an error", in, r)
		}
	}
}

// TestRateWithin: a rate is within a limit when neither its burst nor its refill is larger.
func TestRateWithin(t *testing.T) {
	for _, tt := range []struct {
		rate, limit string
		want        bool
	}{
		{"25/1s", "25/1s", true},
		{"3/10s", "25/1s", true},
		{"2/1m", "100/1s", true},
		{"20/1m", "20/1m", true},
		{"10/30s", "20/1m", true},  // half the burst, the same refill
		{"26/1s", "25/1s", false},  // a larger burst
		{"20/30s", "20/1m", false}, // the same burst, refilled twice as fast
		{"50/2s", "25/1s", false},  // the same refill, a larger burst
	} {
		rate, limit := mustParse(t, tt.rate), mustParse(t, tt.limit)
		if got := rate.Within(limit); got != tt.want {
			t.Errorf("%s within %s: %t, want %t", tt.rate, tt.limit, got, tt.want)
		}
	}
}

func mustParse(t *testing.T, s string) Rate {
	t.Helper()
	r, err := ParseRate(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// clockedMemory is a Memory whose time only moves when the test moves it.
func clockedMemory() (*Memory, *time.Duration) {
	m := NewMemory()
	now := time.Hour // far from zero, as a real process's uptime would be
	m.now = func() time.Duration { return now }
	return m, &now
}

// spend is Memory.Allow, which never fails, for a test that only needs the bucket spent.
func spend(m *Memory, p Policy, key string) Decision {
	d, _ := m.Allow(context.Background(), p, key)
	return d
}

func TestMemoryBurstThenRefill(t *testing.T) {
	m, now := clockedMemory()
	p := Policy{Name: "writes", Rate: Rate{Quota: 5, Window: time.Second}}
	for i := range 5 {
		d, _ := m.Allow(context.Background(), p, "acct_a")
		if !d.Allowed || d.Remaining != 4-i {
			t.Fatalf("request %d: %+v, want allowed with %d remaining", i+1, d, 4-i)
		}
		if want := time.Duration(i+1) * 200 * time.Millisecond; d.ResetAfter != want {
			t.Errorf("request %d: reset after %s, want %s", i+1, d.ResetAfter, want)
		}
	}
	d, _ := m.Allow(context.Background(), p, "acct_a")
	if d.Allowed || d.Remaining != 0 || d.RetryAfter != 200*time.Millisecond || d.ResetAfter != time.Second {
		t.Fatalf("6th request: %+v, want refused, retry after 200ms, reset after 1s", d)
	}
	if other, _ := m.Allow(context.Background(), p, "acct_b"); !other.Allowed || other.Remaining != 4 {
		t.Errorf("another key shares the bucket: %+v", other)
	}
	if reads, _ := m.Allow(context.Background(), Policy{Name: "default", Rate: p.Rate}, "acct_a"); !reads.Allowed {
		t.Errorf("another policy shares the bucket: %+v", reads)
	}

	*now += d.RetryAfter
	if d, _ := m.Allow(context.Background(), p, "acct_a"); !d.Allowed || d.Remaining != 0 {
		t.Errorf("after Retry-After: %+v, want one request allowed", d)
	}
	*now += time.Second
	if d, _ := m.Allow(context.Background(), p, "acct_a"); !d.Allowed || d.Remaining != 4 {
		t.Errorf("after a whole window: %+v, want a full bucket again", d)
	}
}

func TestMemoryPeekSpendsNothing(t *testing.T) {
	m, _ := clockedMemory()
	p := Policy{Name: "unauthenticated", Rate: Rate{Quota: 2, Window: time.Second}}
	for range 10 {
		if d := m.Peek(p, "127.0.0.1"); !d.Allowed {
			t.Fatalf("peek refused a fresh key: %+v", d)
		}
	}
	spend(m, p, "127.0.0.1")
	spend(m, p, "127.0.0.1")
	if d := m.Peek(p, "127.0.0.1"); d.Allowed || d.RetryAfter != 500*time.Millisecond {
		t.Errorf("peek after the quota is spent: %+v, want refused, retry after 500ms", d)
	}
}

func TestMemoryReturnGivesBackOneRequest(t *testing.T) {
	m, now := clockedMemory()
	p := Policy{Name: "unauthenticated", Rate: Rate{Quota: 2, Window: 2 * time.Second}} // one a second
	const ip = "127.0.0.1"
	allowed := func() bool { d, _ := m.Allow(context.Background(), p, ip); return d.Allowed }

	_, first := m.Spend(p, ip)
	spend(m, p, ip)
	m.Return(p, ip, first)
	if !allowed() || allowed() {
		t.Errorf("after one of two is given back at once: want one request allowed, and no more")
	}

	// A request half forgotten gives back half its worth: with the half second that refilled
	// meanwhile, one request passes, and the next only a second and a half after the spends.
	*now += 10 * time.Second // a full bucket again
	_, half := m.Spend(p, ip)
	spend(m, p, ip)
	*now += 500 * time.Millisecond
	m.Return(p, ip, half)
	if !allowed() || allowed() {
		t.Errorf("right after a half return: want one request allowed, and no more")
	}
	*now += 500 * time.Millisecond
	if allowed() {
		t.Errorf("a half-forgotten request gave back its whole worth")
	}

	// A request forgotten since gives back nothing: a return then must not forget a later one.
	*now += 10 * time.Second
	_, old := m.Spend(p, ip)
	*now += 1500 * time.Millisecond // the bucket has refilled: old is forgotten
	spend(m, p, ip)
	spend(m, p, ip)
	m.Return(p, ip, old)
	if allowed() {
		t.Errorf("a request forgotten before its return gave back a later one")
	}
}

func TestMemoryEvictsIdleKeys(t *testing.T) {
	m, now := clockedMemory()
	p := Policy{Name: "default", Rate: Rate{Quota: 100, Window: time.Second}}
	for range 10_000 {
		spend(m, p, "acct_"+rand.Text())
	}
	if n := m.Len(); n != 10_000 {
		t.Fatalf("%d keys held, want 10000", n)
	}
	// Every bucket is full again after one window; each shard sweeps on its next request.
	*now += p.Window + sweepInterval
	for range 1_000 {
		spend(m, p, "fresh_"+rand.Text())
	}
	if n := m.Len(); n != 1_000 {
		t.Errorf("%d keys held after the idle ones expired, want only the 1000 fresh ones", n)
	}
}

// TestRedisAnswersLikeMemory runs the same burst through both limiters: the headers a client
// sees must not change when the Fallback switches between them.
func TestRedisAnswersLikeMemory(t *testing.T) {
	srv := redistest.Start(t)
	r, err := NewRedis(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := NewMemory()
	// A slow refill (one per 3.6 s), so timing cannot blur the counts, and an interval that
	// is not exact in binary floating point, as the script computes.
	p := Policy{Name: "writes", Rate: Rate{Quota: 1000, Window: time.Hour}}
	for i := range 1002 {
		fromRedis, err := r.Allow(context.Background(), p, "acct_same")
		if err != nil {
			t.Fatal(err)
		}
		fromMemory, _ := m.Allow(context.Background(), p, "acct_same")
		if fromRedis.Allowed != fromMemory.Allowed || fromRedis.Remaining != fromMemory.Remaining ||
			(fromRedis.Allowed != (i < 1000)) {
			t.Errorf("request %d: redis %+v, memory %+v", i+1, fromRedis, fromMemory)
		}
		if diff := fromRedis.ResetAfter - fromMemory.ResetAfter; diff < -time.Second || diff > time.Second {
			t.Errorf("request %d: reset after %s in redis, %s in memory", i+1, fromRedis.ResetAfter, fromMemory.ResetAfter)
		}
	}
}

// TestFallbackSurvivesRedisOutage kills a real Redis mid-run: decisions continue from memory,
// the outage is logged once, and the limits move back to Redis when it answers again.
func TestFallbackSurvivesRedisOutage(t *testing.T) {
	srv := redistest.Start(t)
	r, err := NewRedis(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var logs syncBuffer
	var fellBack countingObserver
	f := NewFallback(r, NewMemory(), slog.New(slog.NewTextHandler(&logs, nil))).WithObserver(&fellBack)
	f.probeEvery = 20 * time.Millisecond
	p := Policy{Name: "default", Rate: Rate{Quota: 1000, Window: time.Second}}
	allow := func() Decision {
		t.Helper()
		d, err := f.Allow(context.Background(), p, "acct_a")
		if err != nil || !d.Allowed {
			t.Fatalf("Allow: %+v, %v", d, err)
		}
		return d
	}

	allow()
	if n := fellBack.n.Load(); n != 0 {
		t.Errorf("%d decisions counted as fallbacks while Redis answered", n)
	}
	srv.Stop()
	for range 50 {
		allow()
	}
	if n := fellBack.n.Load(); n != 50 {
		t.Errorf("%d of 50 decisions made in memory were counted as fallbacks", n)
	}
	if !f.Degraded() {
		t.Error("the fallback did not notice Redis is gone")
	}
	if n := strings.Count(logs.String(), "redis failed"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, logs.String())
	}

	srv.Restart()
	deadline := time.Now().Add(5 * time.Second)
	for f.Degraded() && time.Now().Before(deadline) {
		allow()
		time.Sleep(5 * time.Millisecond)
	}
	if f.Degraded() {
		t.Fatal("the fallback did not return to Redis within 5s of its restart")
	}
	if !strings.Contains(logs.String(), "redis answers again") {
		t.Errorf("the recovery was not logged:\n%s", logs.String())
	}
}

// countingObserver counts the decisions a Fallback makes with its backup.
type countingObserver struct{ n atomic.Int64 }

func (o *countingObserver) RateLimitFellBack() { o.n.Add(1) }

// failing is a primary that is always down, to count how often the Fallback tries it.
type failing struct {
	mu    sync.Mutex
	calls int
}

func (f *failing) Allow(context.Context, Policy, string) (Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return Decision{}, errors.New("connection refused")
}

func TestFallbackProbesADownPrimaryRarely(t *testing.T) {
	primary := &failing{}
	f := NewFallback(primary, NewMemory(), slog.New(slog.DiscardHandler))
	f.probeEvery = time.Hour
	p := Policy{Name: "default", Rate: Rate{Quota: 1000, Window: time.Second}}
	for range 100 {
		if d, err := f.Allow(context.Background(), p, "k"); err != nil || !d.Allowed {
			t.Fatalf("Allow: %+v, %v", d, err)
		}
	}
	if primary.calls != 1 {
		t.Errorf("a down primary was tried %d times in one probe interval, want once", primary.calls)
	}
}

// TestFallbackWithObserverCopies: WithObserver leaves its receiver as it was, so a Fallback
// handed to one user cannot start reporting to another's observer.
func TestFallbackWithObserverCopies(t *testing.T) {
	plain := NewFallback(&failing{}, NewMemory(), slog.New(slog.DiscardHandler))
	var fellBack countingObserver
	observed := plain.WithObserver(&fellBack)
	p := Policy{Name: "default", Rate: Rate{Quota: 1000, Window: time.Second}}
	for _, f := range []*Fallback{plain, observed} {
		if _, err := f.Allow(context.Background(), p, "k"); err != nil {
			t.Fatal(err)
		}
	}
	if n := fellBack.n.Load(); n != 1 {
		t.Errorf("the observer was told of %d fallbacks, want 1: the copy's alone", n)
	}
	if plain.WithObserver(nil).observer != nil {
		t.Error("WithObserver(nil) set an observer")
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
