package handlers

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// instrumentation names the request spans' origin, as OpenTelemetry asks every tracer to.
const instrumentation = "github.com/payments-api/payments-api/internal/handlers"

// The request span's own attributes, beside the HTTP ones: request.id matches it to the
// request's log line, payment.id to the payment it created, read or changed.
const (
	requestIDKey       = attribute.Key("request.id")
	paymentIDAttribute = "payment.id"
)

// startSpan starts the request's span (Options.TracerProvider is set), as the child of the
// client's traceparent when it sent one. The phases reported to internal/trace become its
// children, and so do the database queries. Only the method, the route template and the
// request id are recorded here: never a header's value, nor the body.
func (s *Server) startSpan(ctx context.Context, c echo.Context, requestID string) (context.Context, oteltrace.Span) {
	req := c.Request()
	ctx = propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(req.Header))
	name, attrs := req.Method, []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(req.Method), requestIDKey.String(requestID)}
	if route, ok := s.contract.Template(c.Path()); ok { // an unmatched path is the client's choice: not a name
		name += " " + route
		attrs = append(attrs, semconv.HTTPRoute(route))
	}
	return s.tracer.Start(ctx, name, oteltrace.WithSpanKind(oteltrace.SpanKindServer), oteltrace.WithAttributes(attrs...))
}

// endSpan records the status the client got and ends the span. Only a 5xx marks it failed:
// a 4xx is the server working as documented.
func endSpan(span oteltrace.Span, c echo.Context) {
	status := c.Response().Status
	span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	if status >= http.StatusInternalServerError {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}
