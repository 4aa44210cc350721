// Package trace records what one request did, for whoever reads its answer or its log: the
// phases that ran and how long each took (the server sends them as Server-Timing), and the
// decisions met on the way (the idempotency outcome, the ETag comparison, whether the
// transaction committed), which the server logs at debug level.
//
// The code doing the work reports to the Trace carried by its context; with none there, it
// records nothing, so packages report without knowing whether anyone listens. It imports only
// the standard library.
package trace

import (
	"context"
	"sync"
	"time"
)

// The decisions a request can meet, as Decide names them.
const (
	Idempotency = "idempotency" // claimed, replayed, in_flight or mismatch
	ETag        = "etag"        // not_modified, modified, matched, stale or missing
	Transaction = "transaction" // committed or rolled_back
)

// Phase is one named stretch of a request's work.
type Phase struct {
	Name     string
	Duration time.Duration
}

// Trace is one request's record. It is safe for concurrent use.
type Trace struct {
	start     time.Time
	mu        sync.Mutex
	phases    []Phase
	decisions map[string]string
}

type contextKey struct{}

// New starts a Trace now and returns a context carrying it.
func New(ctx context.Context) (context.Context, *Trace) {
	t := &Trace{start: time.Now(), decisions: map[string]string{}}
	return context.WithValue(ctx, contextKey{}, t), t
}

// From returns the Trace ctx carries, or nil.
func From(ctx context.Context) *Trace {
	t, _ := ctx.Value(contextKey{}).(*Trace)
	return t
}

// Start begins a phase; calling the function it returns ends it. Usage:
// `defer trace.Start(ctx, "claim")()`, or `end := trace.Start(...)` where the phase ends
// before the function does.
func Start(ctx context.Context, name string) (end func()) {
	t := From(ctx)
	if t == nil {
		return func() {}
	}
	began := time.Now()
	return func() { t.Add(name, time.Since(began)) }
}

// Decide records the decision taken on what (one of the constants above).
func Decide(ctx context.Context, what, decision string) {
	if t := From(ctx); t != nil {
		t.mu.Lock()
		t.decisions[what] = decision
		t.mu.Unlock()
	}
}

// Add records a phase that is over.
func (t *Trace) Add(name string, d time.Duration) {
	t.mu.Lock()
	t.phases = append(t.phases, Phase{Name: name, Duration: d})
	t.mu.Unlock()
}

// Phases returns the phases recorded so far, in the order they ended.
func (t *Trace) Phases() []Phase {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Phase(nil), t.phases...)
}

// Decision returns the decision recorded on what, or "" when none was taken.
func (t *Trace) Decision(what string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.decisions[what]
}

// Elapsed is the time since the Trace began.
func (t *Trace) Elapsed() time.Duration { return time.Since(t.start) }
