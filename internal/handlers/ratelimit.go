package handlers

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/trace"
	"golang.org/x/sync/singleflight"
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
	metrics *metrics.Metrics   // counts refusals by policy
	lookups singleflight.Group // key lookups in flight, by client address and key (lookUpKey)
}

func newRateLimiter(limits ratelimit.Limits, m *metrics.Metrics) *rateLimiter {
	return &rateLimiter{Enforcer: ratelimit.NewEnforcer(limits), metrics: m}
}

// Failed authentications are limited per client address (the Unauthenticated policy), so
// keys cannot be guessed at speed and a flood of wrong keys costs no database lookups.
// authenticate asks one of three, by what the request carries:
//   - no key: failWithoutKey spends one;
//   - a cached key: checkFailures refuses an address that used them up, and spends nothing;
//   - any other key: lookUpKey spends one before the lookup, and gives it back if the key is good.

// failWithoutKey answers a request that sent no API key: 401, spending one of the client
// address's failed authentications, or 429 once they are used up.
func (l *rateLimiter) failWithoutKey(c echo.Context) error {
	if !l.Enabled() {
		return errNoAPIKey
	}
	h, _, err := l.SpendFailure(c.RealIP())
	if err != nil {
		return l.refused(c, h, err)
	}
	h.Set(c.Response().Header())
	return errNoAPIKey
}

// checkFailures refuses a request with a good key from an address whose failed
// authentications are used up, as it would have refused the key's lookup.
func (l *rateLimiter) checkFailures(c echo.Context) error {
	if !l.Enabled() {
		return nil
	}
	if h, err := l.CheckFailures(c.RealIP()); err != nil {
		return l.refused(c, h, err)
	}
	return nil
}

// lookUpKey resolves a key that is not cached with find, which asks the database.
//
// The lookup first spends one of the client address's failed authentications, and a key that
// proves good gives it back, as does a lookup that got no answer. A check that only peeked
// would let wrong keys sent at once all pass on the last failure left, and each would cost a
// lookup and be a guess. The price: while lookups are in flight, they count against the
// address's quota. The requests of one address with one key share one lookup, and with it
// what the lookup spent, so a burst with a good key that has just left the cache is not
// refused for having spent the quota many times over while it waited.
func (l *rateLimiter) lookUpKey(c echo.Context, key string, find func(context.Context, string) (db.Account, error)) (db.Account, error) {
	ctx := c.Request().Context()
	if !l.Enabled() {
		acct, err := find(ctx, key)
		if errors.Is(err, domain.ErrNotFound) {
			return db.Account{}, errUnknownAPIKey
		}
		return acct, err
	}
	ip := c.RealIP()
	// Keyed by the key's hash, so the lookups in flight hold no key in clear.
	flight := ratelimit.ClientKey(ip) + " " + string(accounts.HashKey(key))
	for {
		led := false // whether this request looked the key up, or shared another's lookup
		v, err, _ := l.lookups.Do(flight, func() (_ any, err error) {
			led = true
			h, receipt, err := l.SpendFailure(ip)
			if err != nil {
				return keyLookup{failures: h}, err
			}
			defer func() { // a good key, or no answer (a panic too): no failed authentication
				if !errors.Is(err, domain.ErrNotFound) {
					l.ReturnFailure(ip, receipt)
				}
			}()
			acct, err := find(ctx, key)
			return keyLookup{acct: acct, failures: h, leaderGone: err != nil && ctx.Err() != nil}, err
		})
		if !led && v.(keyLookup).leaderGone && ctx.Err() == nil {
			continue // the request that looked the key up went away, and with it its lookup
		}
		var exceeded *ratelimit.ExceededError
		switch {
		case errors.As(err, &exceeded):
			return db.Account{}, l.refused(c, v.(keyLookup).failures, err)
		case errors.Is(err, domain.ErrNotFound):
			h := v.(keyLookup).failures
			if !led { // each request with a wrong key is a failed authentication, refused past the quota
				var spent error
				if h, _, spent = l.SpendFailure(ip); spent != nil {
					return db.Account{}, l.refused(c, h, spent)
				}
			}
			h.Set(c.Response().Header())
			return db.Account{}, errUnknownAPIKey
		case err != nil:
			// No answer (the database is away, the deadline passed): the failure spent was
			// given back, and the 503 says where the address's quota stands, as any answer
			// of a limited operation does.
			l.Failures(ip).Set(c.Response().Header())
			return db.Account{}, err
		}
		return v.(keyLookup).acct, nil
	}
}

// keyLookup is what lookUpKey's shared lookup found: the account, the state of the
// address's failed authentications once it spent one (or was refused), and whether the
// lookup failed because the request that made it had gone.
type keyLookup struct {
	acct       db.Account
	failures   ratelimit.Headers
	leaderGone bool
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
