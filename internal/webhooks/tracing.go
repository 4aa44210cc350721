package webhooks

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// instrumentation names the delivery spans' origin, as OpenTelemetry asks every tracer to.
const instrumentation = "github.com/payments-api/payments-api/internal/webhooks"

// The attempt span's own attributes: the webhook-id the receiver sees, the endpoint it goes
// to and the attempt's number, 1 for the first (River's attempt counts the runs of one job,
// and a retry hours later is a job of its own).
const (
	webhookIDKey       = attribute.Key("webhook.id")
	webhookEndpointKey = attribute.Key("webhook.endpoint.id")
	webhookAttemptKey  = attribute.Key("webhook.attempt")
)

// defaultPorts are the ports of a webhook URL that names none.
var defaultPorts = map[string]string{"http": "80", "https": "443"}

// startSpan starts the span of one attempt, when the sender traces: a child of the job run
// that makes it. It records where the delivery goes (the host and port, never the whole URL,
// whose path or query a customer may have put a token in: OpenTelemetry's url.full is left
// out for that) and its webhook-id; never the body, the signature or a secret. The span is
// nil when the sender does not trace.
func (s *Sender) startSpan(ctx context.Context, m Message) (context.Context, oteltrace.Span) {
	if s.tracer == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(http.MethodPost), webhookIDKey.String(m.ID),
		webhookEndpointKey.String(m.EndpointID), webhookAttemptKey.Int(m.Attempt),
	}
	if u, err := url.Parse(m.URL); err == nil {
		attrs = append(attrs, semconv.ServerAddress(u.Hostname()))
		if port := cmp.Or(u.Port(), defaultPorts[u.Scheme]); port != "" {
			if n, err := strconv.Atoi(port); err == nil {
				attrs = append(attrs, semconv.ServerPort(n))
			}
		}
	}
	return s.tracer.Start(ctx, "webhook.attempt", oteltrace.WithSpanKind(oteltrace.SpanKindClient), oteltrace.WithAttributes(attrs...))
}

// endSpan records the attempt's answer and ends the span that startSpan started, if any. A
// failed attempt's error.type is its status, as OpenTelemetry's HTTP client conventions say,
// or, with no answer, its reason, one of failureReason's few fixed texts ("timed out").
func endSpan(span oteltrace.Span, r Result) {
	if span == nil {
		return
	}
	if r.Status != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(r.Status))
	}
	if r.Outcome != Delivered {
		errorType := r.Error
		if r.Status != 0 {
			errorType = strconv.Itoa(r.Status)
		}
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType))
		span.SetStatus(codes.Error, r.Error)
	}
	span.End()
}

// injectTraceparent writes the attempt's traceparent into its headers (W3C Trace Context),
// so a receiver that traces can join the delivery to its own work. Outside a trace it
// writes nothing.
func injectTraceparent(ctx context.Context, h http.Header) {
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
}
