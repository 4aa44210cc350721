package handlers

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
)

// validRequestID is what we accept from a client's Request-Id: short and safe to log.
var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// requestID gives every request an id: the client's, when it is sane, or a new one. It is
// echoed in the Request-Id response header, in problem bodies and in every log line.
func requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get("Request-Id")
		if !validRequestID.MatchString(id) {
			id = "req_" + rand.Text()
		}
		res := c.Response()
		res.Header().Set("Request-Id", id)
		// Generated strict responses set every header the spec documents from their Headers
		// field, so restore ours just before the status line is written.
		res.Before(func() { res.Header().Set("Request-Id", id) })
		c.SetRequest(c.Request().WithContext(withRequestID(c.Request().Context(), id)))
		return next(c)
	}
}

// logRequests writes one structured line per request. HandleError makes the error handler
// run first, so the logged status is the one the client got.
func (s *Server) logRequests() echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		HandleError:  true,
		LogMethod:    true,
		LogRoutePath: true,
		LogStatus:    true,
		LogLatency:   true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			attrs := []slog.Attr{
				slog.String("method", v.Method),
				slog.String("route", v.RoutePath),
				slog.Int("status", v.Status),
				slog.Duration("duration", v.Latency),
				slog.String("request_id", requestIDFrom(c.Request().Context())),
			}
			if acct, ok := c.Request().Context().Value(accountKey).(db.Account); ok {
				attrs = append(attrs, slog.String("account", acct.ID))
			}
			s.logger.LogAttrs(c.Request().Context(), slog.LevelInfo, "request", attrs...)
			return nil
		},
	})
}

// authenticate resolves the bearer key to its account, once per request. Operations the spec
// marks `security: []` (health, the spec itself, problem pages) skip it.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.publicPaths[c.Path()] {
			return next(c)
		}
		scheme, key, _ := strings.Cut(c.Request().Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || key == "" {
			return echo.NewHTTPError(http.StatusUnauthorized, "Send an API key as Authorization: Bearer <key>.")
		}
		acct, err := accounts.Authenticate(c.Request().Context(), db.New(s.pool), key)
		if errors.Is(err, domain.ErrNotFound) {
			return echo.NewHTTPError(http.StatusUnauthorized, "The API key is unknown or revoked.")
		}
		if err != nil {
			return err
		}
		c.SetRequest(c.Request().WithContext(withAccount(c.Request().Context(), acct)))
		return next(c)
	}
}

// readBody reads the whole body once, up to limit bytes (413 beyond), so that the validator,
// the handler and the idempotency fingerprint all see the same bytes.
func readBody(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if req.Body == nil || req.Body == http.NoBody {
				return next(c)
			}
			body, err := io.ReadAll(http.MaxBytesReader(c.Response(), req.Body, limit))
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return echo.NewHTTPError(http.StatusRequestEntityTooLarge,
					"The request body is larger than the limit of "+humanBytes(limit)+".")
			}
			if err != nil {
				return echo.NewHTTPError(http.StatusBadRequest, "The request body could not be read.")
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			c.SetRequest(req.WithContext(withRawBody(req.Context(), body)))
			return next(c)
		}
	}
}

func humanBytes(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
