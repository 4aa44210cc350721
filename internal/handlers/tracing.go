package handlers

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/contract"
	"github.com/payments-api/payments-api/internal/metrics"
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
// children, and so do the database queries. Only the method, the path, the route template
// and the request id are recorded, as OpenTelemetry's HTTP conventions name them: never a
// header's value, the query, nor the body. The route is named when the span ends (endSpan),
// once findOperation has decided whether the request matched one.
func (s *Server) startSpan(ctx context.Context, c echo.Context, requestID string) (context.Context, oteltrace.Span) {
	req := c.Request()
	ctx = propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(req.Header))
	attrs := append(make([]attribute.KeyValue, 0, 6), semconv.URLScheme("http"), requestIDKey.String(requestID))
	if !metrics.StandardMethod(req.Method) {
		// Any token is a method to net/http: one the conventions do not know is _OTHER, in a
		// span named HTTP, so a client cannot choose span names.
		attrs = append(attrs, semconv.HTTPRequestMethodOther, semconv.HTTPRequestMethodOriginal(req.Method))
	} else {
		attrs = append(attrs, semconv.HTTPRequestMethodKey.String(req.Method))
	}
	if path := req.URL.EscapedPath(); len(path) <= contract.MaxEchoLength { // as a problem's instance
		attrs = append(attrs, semconv.URLPath(path))
	}
	return s.tracer.Start(ctx, spanMethod(req.Method), oteltrace.WithSpanKind(oteltrace.SpanKindServer), oteltrace.WithAttributes(attrs...))
}

// spanMethod is a request span's name before its route: the method, or HTTP for one the
// conventions do not know.
func spanMethod(method string) string {
	if !metrics.StandardMethod(method) {
		return "HTTP"
	}
	return method
}

// endSpan names the route the request matched, as its log line and its metrics do
// (routeTemplate; an unmatched path is the client's choice, not a name), records the status
// the client got (answeredStatus) and ends the span. Only a 5xx marks it failed, with the
// status as its error.type and the failure as its error: a 4xx is the server working as
// documented, and a 499 is a client that stopped waiting.
func (s *Server) endSpan(span oteltrace.Span, c echo.Context) {
	if route, ok := s.contract.Template(c.Path()); ok {
		span.SetName(spanMethod(c.Request().Method) + " " + route)
		span.SetAttributes(semconv.HTTPRoute(route))
	}
	status := answeredStatus(c)
	span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	if status >= http.StatusInternalServerError {
		span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(status)))
		msg := http.StatusText(status)
		if failure := stateFrom(c.Request().Context()).failure; failure != nil {
			span.RecordError(failure)
			msg = failure.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}
