package handlers

import (
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/trace"
)

// timingWriter sends the trace's phases as Server-Timing (W3C) on every response:
// `auth;dur=0.4, validate;dur=0.1, claim;dur=0.9, charge;dur=0.1, commit;dur=1.2,
// total;dur=3.1`, durations in milliseconds. It sets the header at the moment the status line
// is written, so the header covers everything up to then, an injected latency included.
//
// It sets Request-Id at that moment too, and only then: generated strict responses set every
// header the spec documents from their Headers field, Request-Id included, and would replace
// one set earlier with an empty one. (Here rather than in an echo Response.Before hook, which
// costs a closure and a slice per request.)
type timingWriter struct {
	http.ResponseWriter
	trace     *trace.Trace
	requestID string
	wrote     bool
}

func (w *timingWriter) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		h := w.Header()
		h[fieldServerTiming] = []string{w.trace.ServerTiming()}
		h[fieldRequestID] = []string{w.requestID}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *timingWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes, read deadlines).
func (w *timingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logDecisions writes, at debug level, the decisions the request met: the line a learner
// reads beside Server-Timing. "none" marks a decision the request never had to take.
func (s *Server) logDecisions(c echo.Context) {
	ctx := c.Request().Context()
	t := trace.From(ctx)
	if t == nil || !s.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	decision := func(what string) string {
		if d := t.Decision(what); d != "" {
			return d
		}
		return "none"
	}
	s.logger.LogAttrs(ctx, slog.LevelDebug, "decisions",
		slog.String("request_id", requestIDFrom(ctx)),
		slog.String(trace.Idempotency, decision(trace.Idempotency)),
		slog.String(trace.ETag, decision(trace.ETag)),
		slog.String(trace.Transaction, decision(trace.Transaction)),
	)
}
