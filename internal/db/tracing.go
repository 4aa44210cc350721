package db

import (
	"context"
	"strings"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/multitracer"
	"go.opentelemetry.io/otel/metric/noop"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// traceQueries adds a span for every statement run under a recording span (a traced request,
// a traced job) to the pool's tracers. The spans carry the statement's text, never its
// arguments. A statement run outside a trace (River polling for jobs) records nothing.
//
// otelpgx rather than a tracer of our own: it is maintained, follows the database semantic
// conventions, and also covers batches, COPY and waits for a connection.
func traceQueries(cfg *pgx.ConnConfig, tp oteltrace.TracerProvider) {
	traced := otelpgx.NewTracer(
		otelpgx.WithTracerProvider(tp),
		otelpgx.WithMeterProvider(noop.NewMeterProvider()), // the metrics are Prometheus's (internal/metrics)
		otelpgx.WithSpanNameCtxFunc(queryName),
	)
	addTracer(cfg, traced)
}

// addTracer adds t beside any tracer cfg already has.
func addTracer(cfg *pgx.ConnConfig, t pgx.QueryTracer) {
	if cfg.Tracer == nil {
		cfg.Tracer = t
		return
	}
	cfg.Tracer = multitracer.New(cfg.Tracer, t)
}

// queryName names a statement's span after its sqlc query ("-- name: PaymentGetByID :one"
// is PaymentGetByID), which says more than its verb; any other statement by its verb.
func queryName(ctx context.Context, sql string) string {
	if rest, ok := strings.CutPrefix(sql, "-- name: "); ok {
		name, _, _ := strings.Cut(rest, " ")
		return name
	}
	return otelpgx.SQLOperationName(ctx, sql)
}
