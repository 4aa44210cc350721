package main

import (
	"testing"
	"time"
)

func TestPercentileIsNearestRank(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		out := make([]time.Duration, len(n))
		for i, v := range n {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one value", ms(7), 0.99, 7 * time.Millisecond},
		{"p50 of 1..100", hundred, 0.50, 50 * time.Millisecond},
		{"p95 of 1..100", hundred, 0.95, 95 * time.Millisecond},
		{"p99 of 1..100", hundred, 0.99, 99 * time.Millisecond},
		{"p100 is the maximum", hundred, 1, 100 * time.Millisecond},
		{"p0 is the minimum", hundred, 0, 1 * time.Millisecond},
		{"p50 of four rounds up the rank", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p51 of four", ms(1, 2, 3, 4), 0.51, 3 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := percentile(tt.sorted, tt.p); got != tt.want {
			t.Errorf("%s: percentile(%v) = %v, want %v", tt.name, tt.p, got, tt.want)
		}
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		values []float64
		want   float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		if got := median(tt.values); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.values, got, tt.want)
		}
	}
	values := []float64{3, 1, 2}
	median(values)
	if values[0] != 3 || values[1] != 1 {
		t.Errorf("median reordered its input: %v", values)
	}
}

// TestSliceRatiosPairEachSliceWithItsBaseline: the ratio is taken per slice (A over the B
// run right after it) and then the median, so a machine that slows down halfway through
// changes both sides of each ratio alike.
func TestSliceRatiosPairEachSliceWithItsBaseline(t *testing.T) {
	s := func(requests int, seconds float64) sample {
		return sample{requests: requests, elapsed: time.Duration(seconds * float64(time.Second))}
	}
	scenario := []sample{s(100, 1), s(50, 1), s(100, 2), s(10, 1)}
	baseline := []sample{s(400, 1), s(200, 1), s(0, 1), s(40, 1)}
	got := sliceRatios(scenario, baseline)
	want := []float64{0.25, 0.25, 0.25} // the slice whose baseline did nothing is skipped
	if len(got) != len(want) {
		t.Fatalf("sliceRatios = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ratio %d = %v, want %v", i, got[i], want[i])
		}
	}
	if m := median(got); m != 0.25 {
		t.Errorf("median ratio %v, want 0.25 although the machine ran at a tenth of its speed in the last slice", m)
	}
}

func TestSampleRateAndMerge(t *testing.T) {
	a := sample{requests: 10, errors: 1, elapsed: time.Second, latencies: []time.Duration{1, 2}}
	b := sample{requests: 30, elapsed: time.Second, latencies: []time.Duration{3}}
	a.merge(b)
	if a.requests != 40 || a.errors != 1 || a.elapsed != 2*time.Second || len(a.latencies) != 3 {
		t.Errorf("merged: %+v", a)
	}
	if r := a.rate(); r != 20 {
		t.Errorf("rate %v, want 20/s", r)
	}
	if r := (sample{}).rate(); r != 0 {
		t.Errorf("rate of nothing %v, want 0", r)
	}
}
