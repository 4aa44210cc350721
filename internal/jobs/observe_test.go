package jobs

import "testing"

// TestObserveRunsWithoutObserver: a nil observer adds no middleware to River's client.
func TestObserveRunsWithoutObserver(t *testing.T) {
	if m := observeRuns(nil); m != nil {
		t.Fatalf("observeRuns(nil) = %v, want no middleware", m)
	}
}
