package main

import (
	"math"
	"slices"
	"time"
)

// sample is what one timed slice of a workload measured.
type sample struct {
	requests  int
	errors    int
	firstErr  error
	elapsed   time.Duration
	latencies []time.Duration // successful requests only, unsorted
}

// rate is requests per second, errors included (an error is an answer too).
func (s sample) rate() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.requests) / s.elapsed.Seconds()
}

// merge adds another slice's measurements, so a scenario's row covers all its slices.
func (s *sample) merge(o sample) {
	s.requests += o.requests
	s.errors += o.errors
	if s.firstErr == nil {
		s.firstErr = o.firstErr
	}
	s.elapsed += o.elapsed
	s.latencies = append(s.latencies, o.latencies...)
}

// percentile is the nearest-rank percentile (p in [0, 1]) of sorted, or 0 when it is empty:
// the smallest value that at least p of the values do not exceed.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p * float64(len(sorted))))
	return sorted[min(max(rank-1, 0), len(sorted)-1)]
}

// median of values (the mean of the middle two for an even count), or 0 when empty. It does
// not change values.
func median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// sliceRatios divides each slice's rate by the rate of the baseline slice run right after
// it. Slices where the baseline did nothing are skipped rather than divided by zero.
func sliceRatios(scenario, baseline []sample) []float64 {
	var ratios []float64
	for i := range min(len(scenario), len(baseline)) {
		if b := baseline[i].rate(); b > 0 {
			ratios = append(ratios, scenario[i].rate()/b)
		}
	}
	return ratios
}
