package jobs

import (
	"github.com/riverqueue/rivercontrib/otelriver"
	"go.opentelemetry.io/otel/metric/noop"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// traceJobs is River's OpenTelemetry middleware: an insert records the inserting span's
// traceparent in the job's metadata, and a run is a span of its own linked to it. A link, not
// a parent: a job may run minutes or hours after the request that asked for it, which would
// stretch the request's trace across all that time. The work a job does (its statements, a
// webhook delivery) is traced as the run span's children.
func traceJobs(tp oteltrace.TracerProvider) *otelriver.Middleware {
	return otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
		TracerProvider:              tp,
		MeterProvider:               noop.NewMeterProvider(), // the metrics are Prometheus's (internal/metrics)
		EnableTracePropagation:      true,
		EnableWorkSpanJobKindSuffix: true,
	})
}
