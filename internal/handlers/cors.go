package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// corsExposedHeaders are the response headers a browser client may read besides the
// CORS-safelisted ones: those this API documents for clients to act on.
var corsExposedHeaders = []string{
	"Location", "ETag", "Idempotent-Replayed", "Request-Id", "Retry-After",
	"RateLimit", "RateLimit-Policy", "Server-Timing", "Preference-Applied",
}

// corsAllowedHeaders are the request headers a browser client may send besides the
// CORS-safelisted ones.
var corsAllowedHeaders = []string{
	"Authorization", "Content-Type", "Idempotency-Key", "If-Match", "If-None-Match", "Request-Id", "Prefer",
}

// cors lets browser clients on allowedOrigins ("*" for any) call the API, with echo's CORS
// middleware. It runs before authentication: a preflight carries no credentials. Keys are
// sent in Authorization, never in cookies, so credentials mode is off and "*" is safe.
// Access-Control-Allow-Methods is the route's Allow, as echo's router computes it.
//
// A plain OPTIONS (no Access-Control-Request-Method) is left to answerMethods, which answers
// it with Allow; a preflight for a path that does not exist never gets here (optionsOnRoutes).
func cors(allowedOrigins []string) echo.MiddlewareFunc {
	handle := middleware.CORSWithConfig(middleware.CORSConfig{
		Skipper: func(c echo.Context) bool {
			req := c.Request()
			if req.Method != http.MethodOptions {
				return false
			}
			allow, _ := c.Get(echo.ContextKeyHeaderAllow).(string)
			return req.Header.Get(echo.HeaderAccessControlRequestMethod) == "" || allow == ""
		},
		AllowOrigins:  allowedOrigins,
		AllowHeaders:  corsAllowedHeaders,
		ExposeHeaders: corsExposedHeaders,
		MaxAge:        600, // seconds a browser may cache a preflight
	})
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		h := handle(next)
		return func(c echo.Context) error {
			// Only a preflight gets more than one Vary value (the CORS middleware adds one
			// to any other request, and nothing else adds any): the hook, a closure, is
			// not worth its allocation on every other request.
			if c.Request().Method == http.MethodOptions {
				res := c.Response()
				res.Before(func() { joinVary(res.Header()) })
			}
			return h(c)
		}
	}
}

// joinVary writes the Vary values the CORS middleware adds one by one (three on a
// preflight) as one field line: the same list to HTTP (RFC 9110, section 5.3), and one
// value to a client, or to the spec's Vary header, that reads only one.
func joinVary(h http.Header) {
	if values := h.Values(echo.HeaderVary); len(values) > 1 {
		h.Set(echo.HeaderVary, strings.Join(values, ", "))
	}
}
