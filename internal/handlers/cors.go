package handlers

import (
	"net/http"

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
// A plain OPTIONS (no Access-Control-Request-Method) and a preflight for a path that does
// not exist are left to answerMethods: they get Allow, or a 404.
func cors(allowedOrigins []string) echo.MiddlewareFunc {
	return middleware.CORSWithConfig(middleware.CORSConfig{
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
}
