package ratelimit

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestHeadersSet: the fields go on a response under names that http.Header finds as
// RateLimit-Policy and RateLimit (Set writes the map directly, so a name not in net/http's
// canonical form would be invisible to Get), replacing what was there; the zero Headers sets
// nothing.
func TestHeadersSet(t *testing.T) {
	header := http.Header{}
	header.Set("RateLimit", "stale")
	Headers{
		Policy: `"default";q=100;w=1, "writes";q=25;w=1`,
		States: []State{{Policy: "default", Remaining: 99, Reset: 1}, {Policy: `wr"it\es`, Remaining: 0, Reset: 3}},
	}.Set(header)
	if got, want := header.Values("RateLimit-Policy"), []string{`"default";q=100;w=1, "writes";q=25;w=1`}; !slices.Equal(got, want) {
		t.Errorf("RateLimit-Policy = %q, want %q", got, want)
	}
	if got, want := header.Values("RateLimit"), []string{`"default";r=99;t=1, "wr\"it\\es";r=0;t=3`}; !slices.Equal(got, want) {
		t.Errorf("RateLimit = %q, want %q", got, want)
	}
	if len(header) != 2 {
		t.Errorf("header has %d fields, want 2: %v", len(header), header)
	}

	header = http.Header{}
	Headers{}.Set(header)
	if len(header) != 0 {
		t.Errorf("the zero Headers set %v", header)
	}
}

// TestStateResetRoundsUp protects the rounding of RateLimit's t: the whole seconds until the
// bucket is full again are rounded up, so a client that waits t seconds always finds it
// full. Truncated, 1.5 s would say t=1 and a client waiting 1 s would be refused.
func TestStateResetRoundsUp(t *testing.T) {
	p := Policy{Name: "default"}
	for _, tt := range []struct {
		after time.Duration
		want  int64
	}{{1500 * time.Millisecond, 2}, {time.Millisecond, 1}, {2 * time.Second, 2}, {0, 0}} {
		if got := StateOf(p, Decision{ResetAfter: tt.after}).Reset; got != tt.want {
			t.Errorf("ResetAfter %s: t=%d, want %d", tt.after, got, tt.want)
		}
	}
}
