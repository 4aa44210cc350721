package trace

import (
	"context"
	"regexp"
	"testing"
	"time"
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
