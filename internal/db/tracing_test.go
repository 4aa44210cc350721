package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A statement run under a recording span is its child, named after its sqlc query, with the
// statement's text and never its arguments; outside a trace it records nothing.
func TestStatementsOfATraceAreItsChildren(t *testing.T) {
	recorder := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	ctx := context.Background()
	pool, err := db.Open(ctx, dbtest.NewURL(t), db.Options{TracerProvider: provider})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	argument := []byte("an argument that must stay out of the span")

	if _, err := db.New(pool).AccountGetByAPIKeyHash(ctx, argument); !errors.Is(db.Translate(err), domain.ErrNotFound) {
		t.Fatalf("untraced lookup: %v", err)
	}
	if n := len(recorder.Ended()); n != 0 {
		t.Fatalf("%d spans recorded outside a trace, want none", n)
	}

	traced, request := provider.Tracer("test").Start(ctx, "request")
	_, _ = db.New(pool).AccountGetByAPIKeyHash(traced, argument)
	request.End()
	var found bool
	for _, s := range recorder.Ended() {
		if s.Name() != "AccountGetByAPIKeyHash" || s.Parent().SpanID() != request.SpanContext().SpanID() {
			continue
		}
		found = true
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.String(), string(argument)) {
				t.Errorf("span attribute %s carries the statement's argument", kv.Key)
			}
		}
	}
	if !found {
		t.Errorf("no AccountGetByAPIKeyHash span under the request span; recorded: %v", recorder.Ended())
	}
}
