package metrics

import (
	"testing"
	"time"
)

// The Observers kept for request series are keyed by the labels recorded, not by what a
// client sent: methods outside the standard set share one entry, as they share one series,
// so a client inventing methods cannot grow the process's memory.
func TestRequestSeriesKeepOneObserverPerSeries(t *testing.T) {
	m := New(nil)
	for _, method := range []string{"XABC", "BREW", "get", "XABC", "GET", "GET"} {
		m.ObserveRequest(method, "unmatched", 405, time.Millisecond)
	}
	var kept []requestLabels
	m.requestSeries.Range(func(k, _ any) bool {
		kept = append(kept, k.(requestLabels))
		return true
	})
	if len(kept) != 2 { // OTHER and GET
		t.Errorf("kept %d observers, want 2 (OTHER and GET): %v", len(kept), kept)
	}
}

// BenchmarkObserveRequest records one request of a series already seen: what every request
// pays for its duration's histogram.
func BenchmarkObserveRequest(b *testing.B) {
	m := New(nil)
	b.ReportAllocs()
	for b.Loop() {
		m.ObserveRequest("GET", "/payments/:id", 200, time.Millisecond)
	}
}
