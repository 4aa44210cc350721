package handlers

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// validRequestID is what we accept from a client's Request-Id: short and safe to log.
var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// startRequest gives every request its id, its trace, its deadline and its failover wait
// (db.WithFailoverWait), with one copy of the request (http.Request.WithContext copies the
// whole request).
//
// The id is the client's Request-Id when it is sane, or a new one; it is echoed in the
// Request-Id response header (by timingWriter), in problem bodies and in every log line.
// The trace (internal/trace) is what the code doing the work reports its phases and
// decisions to; its phases go out as Server-Timing (see timingWriter) and, when the server
// traces, as child spans of the request's span (see startSpan). The deadline,
// REQUEST_TIMEOUT, travels in the context into every database call, so a frozen database
// costs a request its deadline, not forever; the error it ends with answers 503.
func (s *Server) startRequest(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := firstValue(c.Request().Header, fieldRequestID)
		if id == "" || !validRequestID.MatchString(id) { // most clients send none: skip the regexp
			id = "req_" + rand.Text()
		}
		res := c.Response()
		ctx, cancel := context.WithTimeout(c.Request().Context(), s.requestTimeout)
		defer cancel()
		ctx = db.WithFailoverWait(ctx, s.failoverWait)
		ctx, t := trace.New(ctx)
		if s.tracer != nil {
			var span oteltrace.Span
			ctx, span = s.startSpan(ctx, c, id)
			defer s.endSpan(span, c)
		}
		// Last, so first: a context finds a value by asking each layer in turn, newest first,
		// and the request's state is what the middleware and handlers ask for most.
		ctx = withRequestState(ctx, id, c.Request().Context())
		c.SetRequest(c.Request().WithContext(ctx))
		res.Writer = &timingWriter{ResponseWriter: res.Writer, trace: t, requestID: id}
		return next(c)
	}
}

// clientGone reports whether err is the cancellation of a request whose client went away:
// net/http cancels a request's context when its connection closes. (A deadline that passes
// is not this: its error is context.DeadlineExceeded. Nor is a request stopped at shutdown:
// see ErrShutdown.)
func clientGone(ctx context.Context, err error) bool {
	return canceled(ctx, err) && !errors.Is(context.Cause(ctx), ErrShutdown)
}

// ErrShutdown is the cause with which the process cancels the requests still running when
// its SHUTDOWN_TIMEOUT is over, rather than wait for them. Each is answered 503.
var ErrShutdown = errors.New("stopped at shutdown")

// canceled reports whether err is the cancellation of the request's context.
func canceled(ctx context.Context, err error) bool {
	return errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled)
}

// statusClientGone is what the log, the metrics and the span record for a request whose
// client left before its answer, after nginx's 499: no such status is ever sent.
// clientGoneKey marks such a request in its echo.Context (see answeredStatus).
const (
	statusClientGone = 499
	clientGoneKey    = "client_gone"
)

// observeRequests records every request once it has been answered: its duration and status
// in the metrics, under its route template, and one structured line in the log. It hands an
// error to the error handler itself, so both record the status the client got (or 499,
// when it left first), not a guess from the error. One layer does both, with one
// clock, since they measure the same thing.
func (s *Server) observeRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		var cutOff error // an answer that failed after its status went out: a stream cut off
		if err != nil && !c.Response().Committed {
			c.Error(err)
		} else if err != nil {
			cutOff = err
		}
		elapsed := time.Since(start)
		s.metrics.ObserveRequest(c.Request().Method, s.routeTemplate(c), answeredStatus(c), elapsed)
		s.logRequest(c, elapsed, cutOff)
		return err
	}
}

// answeredStatus is the status the metrics, the log and the span record for a request that
// has been answered: the one sent, or 499 when the client left first. Its 503 went to nobody,
// and counted as a failure of ours it would page someone for a client's own timeout.
func answeredStatus(c echo.Context) int {
	if c.Get(clientGoneKey) == true {
		return statusClientGone
	}
	return c.Response().Status
}

// logRequest writes the request's line: at info; at warn when the server could not do what
// was asked (a 5xx: the database or the processor unavailable, a shutdown) or the answer was
// cut off after its status went out (cutOff), since the status alone says all went well; at
// error for a 500, a failure of the server itself. A problem's line names its type, a 5xx's
// the error behind it, and a traced request's its trace, so each line leads to its span.
func (s *Server) logRequest(c echo.Context, elapsed time.Duration, cutOff error) {
	ctx := c.Request().Context()
	status := answeredStatus(c)
	st := stateFrom(ctx)
	level := slog.LevelInfo
	switch {
	case status == http.StatusInternalServerError:
		level = slog.LevelError
	case st.failure != nil || cutOff != nil:
		level = slog.LevelWarn
	}
	if !s.logger.Enabled(ctx, level) {
		return // LOG_LEVEL=warn or error: no request lines but those (and no debug decisions)
	}
	// Room for every attribute below, so the optional ones are appended on the stack
	// instead of growing the slice on the heap.
	attrs := append(make([]slog.Attr, 0, 11),
		slog.String("method", c.Request().Method),
		slog.String("route", s.routeTemplate(c)),
		slog.Int("status", status),
		slog.Duration("duration", elapsed),
		slog.String("request_id", st.id),
	)
	if s.tracer != nil {
		if sc := oteltrace.SpanContextFromContext(ctx); sc.IsValid() {
			attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
		}
	}
	if st.problem != "" {
		attrs = append(attrs, slog.String("problem", st.problem))
	}
	if st.failure != nil {
		attrs = append(attrs, slog.String("error", st.failure.Error()))
	}
	if cutOff != nil {
		attrs = append(attrs, slog.String("cut_off", cutOff.Error()))
	}
	if status == statusClientGone {
		attrs = append(attrs, slog.Bool("client_gone", true))
	}
	if acct, ok := authenticatedAccount(ctx); ok {
		attrs = append(attrs, slog.String("account", acct.ID))
	}
	if c.Get(lostResponseKey) == true {
		attrs = append(attrs, slog.Bool("response_dropped", true)) // Prefer: fault=lost-response
	}
	// The record goes to the handler directly, with no caller: Logger.LogAttrs would walk
	// the stack for one on every request, for a source line the handler does not write.
	r := slog.NewRecord(time.Now(), level, "request", 0)
	r.AddAttrs(attrs...)
	_ = s.logger.Handler().Handle(ctx, r) // as Logger does, a line that fails to write is dropped
	s.logDecisions(c)
}

// authenticate resolves the bearer key to its account, once per request (from a short-lived
// cache: see accounts.Authenticator for how long a revoked key may still work). Operations
// the spec marks `security: []` (health, metrics, the spec itself, problem pages) skip it.
// Failed authentications are limited per client address on the way (rateLimiter.lookUpKey
// says how): an address that used them up is refused before its key is looked up.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.publicPaths[c.Path()] {
			return next(c)
		}
		var scheme, key string
		if fields := c.Request().Header[fieldAuthorization]; len(fields) == 1 { // two name no one key
			scheme, key, _ = strings.Cut(fields[0], " ")
			key = strings.TrimLeft(key, " ") // the scheme and the key are apart by one space or more
		}
		if !strings.EqualFold(scheme, "Bearer") || key == "" {
			return s.limits.failWithoutKey(c)
		}
		span := trace.Start(c.Request().Context(), "auth")
		acct, err := s.resolveKey(c, key)
		span.End()
		if err != nil {
			return err
		}
		st := stateFrom(c.Request().Context())
		st.account, st.authenticated = acct, true
		return next(c)
	}
}

// resolveKey is the account of key: from the cache, or looked up.
func (s *Server) resolveKey(c echo.Context, key string) (db.Account, error) {
	if acct, ok := s.apiKeys.Cached(key); ok {
		return acct, s.limits.checkFailures(c)
	}
	return s.limits.lookUpKey(c, key, s.apiKeys.Authenticate)
}

// readBody reads the whole body once, up to limit bytes (413 beyond), so that the validator,
// the handler and the idempotency fingerprint all see the same bytes. A body sent to an
// operation that takes none is left unread: nothing would read it, and reading it could
// only answer what that operation does not document (413, or a timeout's 400).
func (s *Server) readBody(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if req.Body == nil || req.Body == http.NoBody || !operationOf(c).TakesBody() {
				return next(c)
			}
			span := trace.Start(req.Context(), "read")
			body, err := s.receiveBody(c, limit)
			span.End()
			if err != nil {
				return err
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			stateFrom(req.Context()).body = body
			return next(c)
		}
	}
}

// receiveBody reads the body within the server's READ_TIMEOUT, or until drainGrace after the
// server starts draining: then the read is cut short, so a shutdown never waits long on a
// body that trickles in. A body read whole is served, draining or not: the request is in
// flight, and in-flight requests finish.
func (s *Server) receiveBody(c echo.Context, limit int64) ([]byte, error) {
	rc := http.NewResponseController(c.Response())
	deadlineSet := make(chan struct{})
	stopWatching := context.AfterFunc(s.draining, func() {
		_ = rc.SetReadDeadline(time.Now().Add(drainGrace))
		close(deadlineSet)
	})
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, limit))
	if !stopWatching() { // the server began draining
		if err != nil {
			return nil, unavailable(retryAfterUnavailable, "The server is shutting down and stopped reading the request; send it again.")
		}
		// The body arrived whole. Lift the deadline: net/http reads on in the background once
		// the body is read, and a read that timed out would cancel the request.
		<-deadlineSet
		_ = rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		return nil, &bodyError{cause: err}
	}
	return body, nil
}

// drainGrace is how long a body still arriving when the server starts draining may take. A
// body already sent is read within it; one that trickles in is cut short. Not zero: a read
// deadline already past would also end net/http's read in the background once the body is
// read, and with it a request whose body had arrived.
const drainGrace = time.Second

func humanBytes(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
