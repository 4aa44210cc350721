// Package trace records what one request did, for whoever reads its answer or its log: the
// phases that ran and how long each took (the server sends them as Server-Timing), and the
// decisions met on the way (the idempotency outcome, the ETag comparison, whether the
// transaction committed), which the server logs at debug level.
//
// The code doing the work reports to the Trace carried by its context; with none there, it
// records nothing, so packages report without knowing whether anyone listens. When the request
// is also being traced with OpenTelemetry (its context carries a recording span), each phase
// is a child span of it as well: one Start, read by both Server-Timing and the collector.
// It imports the standard library and the OpenTelemetry API (never the SDK: what exports the
// spans is for cmd to choose).
package trace

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// instrumentation names the phases' spans' origin, as OpenTelemetry asks every tracer to.
const instrumentation = "github.com/payments-api/payments-api/internal/trace"

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
	decisions [3]decision // one per constant above
	// buf holds the first phases, so that a request's trace is one allocation: it is on
	// every request's path.
	buf [8]Phase
}

type decision struct{ what, decision string }

type contextKey struct{}

// New starts a Trace now and returns a context carrying it.
func New(ctx context.Context) (context.Context, *Trace) {
	t := &Trace{start: time.Now()}
	t.phases = t.buf[:0]
	return context.WithValue(ctx, contextKey{}, t), t
}

// From returns the Trace ctx carries, or nil.
func From(ctx context.Context) *Trace {
	t, _ := ctx.Value(contextKey{}).(*Trace)
	return t
}

// Span is a phase under way; End records it.
type Span struct {
	trace *Trace
	name  string
	began time.Time
	otel  oteltrace.Span // nil unless ctx carried a recording span
}

// Start begins a phase. Usage: `defer trace.Start(ctx, "claim").End()`, or
// `span := trace.Start(...)` and `span.End()` where the phase ends before the function does.
//
// When ctx carries a recording OpenTelemetry span, the phase is also a child span of it, made
// by the same TracerProvider (so servers that share a process never mix their spans). A
// context that is not being traced costs one context lookup, and no allocation.
func Start(ctx context.Context, name string) Span {
	s := Span{name: name}
	if t := From(ctx); t != nil {
		s.trace, s.began = t, time.Now()
	}
	if parent := oteltrace.SpanFromContext(ctx); parent.IsRecording() {
		_, s.otel = parent.TracerProvider().Tracer(instrumentation).Start(ctx, name)
	}
	return s
}

// End records the phase, from Start until now. It does nothing when ctx carried no Trace and
// no recording span.
func (s Span) End() {
	if s.trace != nil {
		s.trace.Add(s.name, time.Since(s.began))
	}
	if s.otel != nil {
		s.otel.End()
	}
}

// Fail marks the phase's OpenTelemetry span failed with err, when err is not nil: call it
// before End, so a trace shows which phase a failed request failed in (the processor's
// charge, say), not only that it failed.
func (s Span) Fail(err error) {
	if s.otel != nil && err != nil {
		s.otel.RecordError(err)
		s.otel.SetStatus(codes.Error, err.Error())
	}
}

// Attribute sets key to value on the OpenTelemetry span ctx carries, when it is recording:
// what a collector should be able to find the request by (a payment's id), never a secret.
func Attribute(ctx context.Context, key, value string) {
	if span := oteltrace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String(key, value))
	}
}

// Decide records the decision taken on what, one of the constants above (the Trace has room
// for those three).
func Decide(ctx context.Context, what, taken string) {
	if t := From(ctx); t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		for i, d := range t.decisions {
			if d.what == what || d.what == "" {
				t.decisions[i] = decision{what, taken}
				return
			}
		}
	}
}

// Add records a phase that is over.
func (t *Trace) Add(name string, d time.Duration) {
	t.mu.Lock()
	t.phases = append(t.phases, Phase{Name: name, Duration: d})
	t.mu.Unlock()
}

// Decision returns the decision recorded on what, or "" when none was taken.
func (t *Trace) Decision(what string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range t.decisions {
		if d.what == what {
			return d.decision
		}
	}
	return ""
}

// Elapsed is the time since the Trace began.
func (t *Trace) Elapsed() time.Duration { return time.Since(t.start) }

// ServerTiming is the value of a Server-Timing header (W3C Server Timing) for the phases so
// far, in the order they ended, then total, the time since the Trace began:
// `auth;dur=0.412, validate;dur=0.1, total;dur=3.107`, in milliseconds with at most three
// decimals. Phase names are tokens, so the value is also an RFC 8941 list of tokens with a
// decimal dur parameter, which is how the tests parse it.
func (t *Trace) ServerTiming() string {
	total := t.Elapsed()
	t.mu.Lock()
	defer t.mu.Unlock()
	var buf [192]byte // room for eight phases on the stack; more move to the heap
	b := buf[:0]
	for _, p := range t.phases {
		b = appendTiming(b, p.Name, p.Duration)
		b = append(b, ", "...)
	}
	return string(appendTiming(b, "total", total))
}

// appendTiming appends `name;dur=ms`. The duration is cut to whole microseconds, the three
// decimals of milliseconds that a structured-field decimal holds, and always has a decimal
// point: `dur=2` would be a structured-field integer, so a whole 2 ms goes out as `2.0`.
// Integer arithmetic writes it: it is on every response, and formatting a float is slower.
func appendTiming(b []byte, name string, d time.Duration) []byte {
	b = append(b, name...)
	b = append(b, ";dur="...)
	us := max(d.Microseconds(), 0)
	b = strconv.AppendInt(b, us/1000, 10)
	b = append(b, '.')
	frac := us % 1000
	if frac == 0 {
		return append(b, '0')
	}
	digits := [3]byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
	n := len(digits)
	for digits[n-1] == '0' { // 0.5, not 0.500
		n--
	}
	return append(b, digits[:n]...)
}
