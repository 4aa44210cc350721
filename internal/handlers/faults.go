package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/trace"
)

// lostResponseKey marks, in the echo.Context, a request whose answer is to be lost
// (Prefer: fault=lost-response): dropLostResponses closes its connection.
const lostResponseKey = "fault.lost_response"

// retryAfterInjected is the Retry-After of an injected 503: short, so that an SDK's retry
// tests do not wait.
const retryAfterInjected = 1

// injectFaults makes the failures SDKs must survive happen on demand, for requests that
// carry an API key (see prefer.go for the preferences). It runs after authentication and the
// rate limiter, where a real outage or a real 429 would strike, and before the body is read:
//
//   - fault=error-before answers 503 service-unavailable with Retry-After; nothing runs.
//   - fault=rate-limited answers the 429 the rate limiter sends (rateLimiter.refuse), also when
//     the operator turned rate limits off: an SDK's 429 test must never pass without a 429.
//   - fault=lost-response lets the request run and commit, swallows its answer, and has
//     dropLostResponses close the connection: the client sees the connection close, and a
//     retry with the same Idempotency-Key replays what was committed.
//   - latency=<duration> holds the answer back for that long after the work, within the
//     request's deadline.
//
// Preference-Applied names the preferences an answer applied (RFC 7240).
func (s *Server) injectFaults(limits *rateLimiter) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if !s.faultInjection {
			return next
		}
		return func(c echo.Context) error {
			if _, ok := authenticatedAccount(c.Request().Context()); !ok {
				return next(c) // a public route
			}
			prefs, err := parsePrefer(c.Request().Header[fieldPrefer])
			if err != nil {
				return err
			}
			res := c.Response()
			if prefs.latency > 0 {
				res.Writer = &delayingWriter{ResponseWriter: res.Writer, ctx: c.Request().Context(), prefs: prefs}
			}
			switch prefs.fault {
			case faultErrorBefore:
				applyPreference(res.Header(), preferFault+"="+faultErrorBefore)
				return unavailable(retryAfterInjected, "Prefer: fault=error-before asked for this failure. Nothing was done; send the request again after Retry-After seconds.")
			case faultRateLimited:
				applyPreference(res.Header(), preferFault+"="+faultRateLimited)
				return limits.refuse(c)
			case faultLostResponse:
				res.Writer = discardingWriter{res.Writer}
				c.Set(lostResponseKey, true)
			}
			return next(c)
		}
	}
}

// dropLostResponses runs first of all middleware, outside echo's Recover (which passes
// http.ErrAbortHandler on): once a request marked by fault=lost-response has run, been
// logged and measured, it panics with http.ErrAbortHandler, and net/http closes the
// connection without writing anything, quietly.
func dropLostResponses(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if c.Get(lostResponseKey) == true {
			panic(http.ErrAbortHandler)
		}
		return err
	}
}

// applyPreference adds one preference to Preference-Applied.
func applyPreference(h http.Header, preference string) {
	if applied := h.Get("Preference-Applied"); applied != "" {
		preference = applied + ", " + preference
	}
	h.Set("Preference-Applied", preference)
}

// discardingWriter swallows an answer: headers, status and body go nowhere.
type discardingWriter struct{ inner http.ResponseWriter }

func (w discardingWriter) Header() http.Header         { return http.Header{} }
func (w discardingWriter) WriteHeader(int)             {}
func (w discardingWriter) Write(b []byte) (int, error) { return len(b), nil }

// Unwrap lets http.ResponseController reach the connection (read deadlines while draining).
func (w discardingWriter) Unwrap() http.ResponseWriter { return w.inner }

// delayingWriter holds the status line back for the injected latency, or until the request's
// deadline or its client's departure, whichever comes first. Preference-Applied names the
// latency only when all of it was applied.
type delayingWriter struct {
	http.ResponseWriter
	ctx   context.Context // the request's: a ResponseWriter's methods take none
	prefs preferences
	wrote bool
}

func (w *delayingWriter) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		span := trace.Start(w.ctx, "latency")
		if sleep(w.ctx, w.prefs.latency) {
			applyPreference(w.Header(), preferLatency+"="+w.prefs.latency.String())
		}
		span.End()
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *delayingWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *delayingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sleep waits d and reports true, or reports false as soon as ctx ends.
func sleep(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
