package trace

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestServerTimingListsPhasesThenTotal(t *testing.T) {
	ctx, tr := New(context.Background())
	tr.Add("auth", 412*time.Microsecond)
	tr.Add("commit", 1500*time.Microsecond+999*time.Nanosecond) // cut to whole microseconds
	Start(ctx, "validate").End()

	got := tr.ServerTiming()
	want := regexp.MustCompile(`^auth;dur=0\.412, commit;dur=1\.5, validate;dur=\d+(\.\d{1,3})?, total;dur=\d+(\.\d{1,3})?$`)
	if !want.MatchString(got) {
		t.Errorf("ServerTiming() = %q, want it to match %s", got, want)
	}
}

// A whole number of milliseconds still goes out as a decimal: `dur=2` would be a
// structured-field integer, which a client parsing Server-Timing as RFC 8941 rejects.
func TestServerTimingDurIsAlwaysADecimal(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "claim;dur=0.0"},
		{999 * time.Nanosecond, "claim;dur=0.0"},
		{2 * time.Millisecond, "claim;dur=2.0"},
		{2*time.Millisecond + time.Microsecond, "claim;dur=2.001"},
		{2*time.Millisecond + 10*time.Microsecond, "claim;dur=2.01"},
		{2*time.Millisecond + 500*time.Microsecond, "claim;dur=2.5"},
		{50 * time.Microsecond, "claim;dur=0.05"},
		{1234567 * time.Microsecond, "claim;dur=1234.567"},
		{40 * time.Second, "claim;dur=40000.0"},
	} {
		if got := string(appendTiming(nil, "claim", tt.d)); got != tt.want {
			t.Errorf("appendTiming(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// Every whole number of microseconds up to ten seconds reads back as itself, in at most
// three decimals and never without the point.
func TestServerTimingDurReadsBackAsItsMicroseconds(t *testing.T) {
	for us := int64(0); us <= 10_000_000; us += 7 {
		got := string(appendTiming(nil, "", time.Duration(us)*time.Microsecond))[len(";dur="):]
		whole, frac, ok := strings.Cut(got, ".")
		if !ok || len(frac) < 1 || len(frac) > 3 || strings.HasSuffix(frac, "0") && frac != "0" {
			t.Fatalf("%d µs: dur=%s, want a decimal with 1 to 3 decimals and no trailing zero", us, got)
		}
		f, err := strconv.ParseFloat(got, 64)
		if err != nil || f != float64(us)/1e3 || whole != strconv.FormatInt(us/1000, 10) {
			t.Fatalf("%d µs: dur=%s reads back as %v (%v)", us, got, f, err)
		}
	}
}

func TestWithoutATraceNothingIsRecorded(t *testing.T) {
	ctx := context.Background()
	Start(ctx, "claim").End() // must not panic
	Decide(ctx, Idempotency, "claimed")
	if From(ctx) != nil {
		t.Fatal("From found a trace in a context that has none")
	}
}

func TestDecisions(t *testing.T) {
	ctx, tr := New(context.Background())
	if got := tr.Decision(ETag); got != "" {
		t.Errorf("Decision before any = %q, want empty", got)
	}
	Decide(ctx, ETag, "not_modified")
	if got := tr.Decision(ETag); got != "not_modified" {
		t.Errorf("Decision = %q, want not_modified", got)
	}
}

// A phase of a traced request is also a child span of the request's span, made by the same
// provider; the phase still goes out as Server-Timing.
func TestPhasesOfATracedRequestAreChildSpans(t *testing.T) {
	recorder := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	ctx, request := provider.Tracer("test").Start(context.Background(), "POST /payments")
	ctx, tr := New(ctx)

	Start(ctx, "claim").End()
	Attribute(ctx, "payment.id", "pay_1")
	request.End()

	spans := recorder.Ended()
	if len(spans) != 2 || spans[0].Name() != "claim" || spans[0].Parent().SpanID() != request.SpanContext().SpanID() {
		t.Fatalf("ended spans %v, want claim as the request span's child, then the request's", spans)
	}
	if got := spans[1].Attributes(); len(got) != 1 || got[0] != attribute.String("payment.id", "pay_1") {
		t.Errorf("request span attributes %v, want payment.id", got)
	}
	if !strings.HasPrefix(tr.ServerTiming(), "claim;dur=") {
		t.Errorf("ServerTiming() = %q, want the claim phase", tr.ServerTiming())
	}
}

// Without a recording span, a phase costs no allocation: it runs on every request.
func TestAnUntracedPhaseDoesNotAllocate(t *testing.T) {
	ctx, _ := New(context.Background())
	allocs := testing.AllocsPerRun(5, func() { // within the Trace's room for eight phases
		Start(ctx, "claim").End()
		Attribute(ctx, "payment.id", "pay_1")
	})
	if allocs != 0 {
		t.Errorf("%v allocations per untraced phase, want 0", allocs)
	}
}
