package handlers

import (
	"log/slog"
	"net/http"

	"github.com/dunglas/httpsfv"
	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/trace"
)

// traceRequests gives every request a trace (internal/trace) that the code doing the work
// reports its phases and decisions to, and sends the phases as Server-Timing (W3C) on every
// response: `auth;dur=0.4, validate;dur=0.1, claim;dur=0.9, charge;dur=0.1, commit;dur=1.2,
// total;dur=3.1`, durations in milliseconds. The header is set by the response writer at the
// moment the status line is written, so it covers everything up to then, an injected latency
// included.
func traceRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx, t := trace.New(c.Request().Context())
		c.SetRequest(c.Request().WithContext(ctx))
		res := c.Response()
		res.Writer = &timingWriter{ResponseWriter: res.Writer, trace: t}
		return next(c)
	}
}

// timingWriter sets Server-Timing just before the status line goes out.
type timingWriter struct {
	http.ResponseWriter
	trace *trace.Trace
	wrote bool
}

func (w *timingWriter) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		w.Header().Set("Server-Timing", serverTiming(w.trace))
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

// serverTiming is the header's value: one member per phase, in the order the phases ended,
// then total. Server-Timing's syntax is a structured-field list (RFC 8941) of tokens with a
// decimal dur parameter, so httpsfv writes it.
func serverTiming(t *trace.Trace) string {
	phases := t.Phases()
	members := make([]httpsfv.Member, 0, len(phases)+1)
	add := func(name string, ms float64) {
		item := httpsfv.NewItem(httpsfv.Token(name))
		item.Params.Add("dur", ms)
		members = append(members, item)
	}
	for _, p := range phases {
		add(p.Name, milliseconds(p.Duration.Seconds()))
	}
	add("total", milliseconds(t.Elapsed().Seconds()))
	return structuredList(members...)
}

// milliseconds converts seconds to milliseconds with the three decimals a structured-field
// decimal holds.
func milliseconds(seconds float64) float64 {
	return float64(int64(seconds*1e6)) / 1e3
}

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
