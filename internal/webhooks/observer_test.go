package webhooks

import (
	"testing"
	"time"
)

type countingObserver struct{ attempts int }

func (o *countingObserver) WebhookDelivered(string, time.Duration) { o.attempts++ }
func (o *countingObserver) WebhookDeliveryEnded(string)            {}

// TestWithObserverCopies: WithObserver leaves the Deliverer it is called on as it was, so a
// Deliverer shared by two callers is never observed behind the other's back.
func TestWithObserverCopies(t *testing.T) {
	plain := NewDeliverer(nil, nil, nil, nil)
	o := &countingObserver{}
	observed := plain.WithObserver(o)
	plain.observe(Result{Outcome: Delivered})
	observed.observe(Result{Outcome: Delivered})
	if o.attempts != 1 || plain.observer != nil {
		t.Fatalf("observer told %d attempts, want 1 (the copy's); the original's observer is %v", o.attempts, plain.observer)
	}
	if observed.WithObserver(nil).observer != nil {
		t.Fatal("WithObserver(nil) kept an observer")
	}
}
