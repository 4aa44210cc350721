package handlers

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/trace"
)

// writeRoutes are the operations under the Writes policy: the ones that move money or
// start work, which OWASP API6 says to limit apart from reads.
var writeRoutes = map[string]bool{
	http.MethodPost + " /payments": true,
	http.MethodPost + " /refunds":  true,
	http.MethodPost + " /reports":  true,
}

// addressRoutes are the operations without a key that cost something, limited per client
// address instead of per account.
var addressRoutes = map[string]bool{
	http.MethodPost + " /test/accounts": true,
}

// rateLimiter adapts a ratelimit.Enforcer to echo: it asks for the decision, puts
// RateLimit-Policy and RateLimit on the response, and returns a refusal as the error that
// errorProblems answers with 429. It runs before the handlers, so a 429 is never stored
// under an Idempotency-Key.
type rateLimiter struct {
	*ratelimit.Enforcer
	metrics *metrics.Metrics // counts refusals by policy
}

func newRateLimiter(limits ratelimit.Limits, m *metrics.Metrics) *rateLimiter {
	return &rateLimiter{Enforcer: ratelimit.NewEnforcer(limits), metrics: m}
}

// limitFailedAuth runs before authenticate: an address whose failed authentications used up
// the Unauthenticated quota gets 429 before its key is looked up. Failures are counted after
// authenticate answers 401; successful requests spend nothing here.
func (l *rateLimiter) limitFailedAuth(public map[string]bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if !l.Enabled() {
			return next
		}
		return func(c echo.Context) error {
			if public[c.Path()] {
				return next(c)
			}
			if h, err := l.CheckFailures(c.RealIP()); err != nil {
				return l.refused(c, h, err)
			}
			err := next(c)
			if err != nil && isUnauthorized(err) {
				l.CountFailure(c.Request().Context(), c.RealIP()).Set(c.Response().Header())
			}
			return err
		}
	}
}

// isUnauthorized reports whether err answers 401. It is asked only of an error: errors.As
// needs its target on the heap, which would cost every successful request an allocation.
func isUnauthorized(err error) bool {
	var unauthorized *unauthorizedError
	return errors.As(err, &unauthorized)
}

// limitAccount runs after authenticate and spends the account's buckets; on the routes
// without a key in addressRoutes, the client address's.
func (l *rateLimiter) limitAccount(next echo.HandlerFunc) echo.HandlerFunc {
	if !l.Enabled() {
		return next
	}
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		acct, ok := authenticatedAccount(ctx)
		if !ok {
			if addressRoutes[c.Request().Method+" "+c.Path()] {
				h, err := l.SpendAddress(ctx, c.RealIP())
				if err != nil {
					return l.refused(c, h, err)
				}
				h.Set(c.Response().Header())
			}
			return next(c) // a public route
		}
		span := trace.Start(ctx, "ratelimit")
		st := stateFrom(ctx)
		h, err := l.SpendAccount(ctx, acct.ID, ownRates(acct), isWrite(c), st.rateLimitBuf[:0])
		span.End()
		if err != nil {
			return l.refused(c, h, err)
		}
		h.Set(c.Response().Header())
		st.rateLimits = h.States // for refuse
		return next(c)
	}
}

// refused answers a request the enforcer did not let through: a refusal with its headers,
// counted, or a limiter that failed.
func (l *rateLimiter) refused(c echo.Context, h ratelimit.Headers, err error) error {
	h.Set(c.Response().Header())
	var exceeded *ratelimit.ExceededError
	if errors.As(err, &exceeded) {
		l.metrics.RateLimitRefused(exceeded.Policy.Name)
	}
	return err
}

// refuse answers a request that limitAccount let through with the 429 its route's last
// policy would answer (ratelimit.Enforcer.Refuse). It is what Prefer: fault=rate-limited
// asks for, and counts as no refusal.
func (l *rateLimiter) refuse(c echo.Context) error {
	ctx := c.Request().Context()
	h, err := l.Refuse(ownRates(accountFrom(ctx)), isWrite(c), stateFrom(ctx).rateLimits)
	h.Set(c.Response().Header())
	return err
}

// isWrite reports whether the request's route is one of writeRoutes.
func isWrite(c echo.Context) bool { return writeRoutes[c.Request().Method+" "+c.Path()] }

// ownRates are the rates an account carries in place of the server's.
func ownRates(acct db.Account) ratelimit.AccountRates {
	own := accounts.QuotasOf(acct)
	return ratelimit.AccountRates{Default: own.Default, Writes: own.Writes}
}

// rateLimitedProblem is the 429 for a refused request. RateLimit and RateLimit-Policy are
// already on the response.
func rateLimitedProblem(e *ratelimit.ExceededError) *problem {
	p := newProblem(probRateLimited, e.Detail())
	p.ViolatedPolicies = []string{e.Policy.Name}
	p.Headers.Set("Retry-After", strconv.Itoa(e.RetryAfterSeconds()))
	return p
}
