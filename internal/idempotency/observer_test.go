package idempotency

import "testing"

type recordingObserver struct{ outcomes []string }

func (o *recordingObserver) IdempotencyOutcome(_, outcome string) {
	o.outcomes = append(o.outcomes, outcome)
}

// TestWithObserverCopies: WithObserver leaves the Store it is called on as it was.
func TestWithObserverCopies(t *testing.T) {
	plain := NewStore(nil, DefaultTTL)
	o := &recordingObserver{}
	if observed := plain.WithObserver(o); observed.observer != o || plain.observer != nil {
		t.Fatalf("WithObserver: copy's observer %v, original's %v", observed.observer, plain.observer)
	}
	if plain.WithObserver(o).WithObserver(nil).observer != nil {
		t.Fatal("WithObserver(nil) kept an observer")
	}
}
