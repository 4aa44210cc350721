package handlers

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/trace"
)

// RateLimits are the quotas the server enforces.
type RateLimits struct {
	// Limiter holds the per-account buckets: in Redis, shared by every process, when one is
	// configured. Nil counts nothing and sends no rate-limit headers (RATE_LIMIT_DISABLED);
	// the policies below then still bound the quotas a throwaway account may ask for, and
	// shape the 429 that Prefer: fault=rate-limited answers.
	Limiter ratelimit.Limiter
	// Default counts every authenticated request; Writes also counts the POSTs that move
	// money or start jobs (writeRoutes). An account may carry lower quotas of its own for
	// both (accounts.Quotas).
	Default, Writes ratelimit.Policy
	// Unauthenticated counts, per client address, the requests that fail authentication. It
	// lives in this process's memory: it is checked before the key lookup on every request,
	// and a shared check would add a Redis round trip to every one.
	Unauthenticated ratelimit.Policy
	// TestAccounts counts, per client address, the throwaway accounts created
	// (POST /test/accounts), in Limiter. A zero quota leaves them unlimited.
	TestAccounts ratelimit.Policy
}

// writeRoutes are the operations under the Writes policy: the ones that move money or
// start work, which OWASP API6 says to limit apart from reads.
var writeRoutes = map[string]bool{
	http.MethodPost + " /payments": true,
	http.MethodPost + " /refunds":  true,
	http.MethodPost + " /reports":  true,
}

// rateLimiter is the middleware over a ratelimit.Limiter. Handlers know nothing of it: it
// answers 429 before they run (so a 429 is never stored under an Idempotency-Key), and puts
// RateLimit-Policy and RateLimit on every response of a limited route.
type rateLimiter struct {
	RateLimits
	failures *ratelimit.Memory
	metrics  *metrics.Metrics // counts refusals by policy
	// The RateLimit-Policy values of the server's policies never change, so they are
	// serialised once; only an account with quotas of its own has its own serialised.
	readsPolicy, writesPolicy, failuresPolicy, testAccountsPolicy string
}

// addressRoutes are the operations without a key that cost something, limited per client
// address instead of per account.
var addressRoutes = map[string]bool{
	http.MethodPost + " /test/accounts": true,
}

// newRateLimiter is the rate limiter of limits. Without a Limiter its middleware passes
// every request on.
func newRateLimiter(limits RateLimits, m *metrics.Metrics) *rateLimiter {
	return &rateLimiter{
		RateLimits:         limits,
		failures:           ratelimit.NewMemory(),
		metrics:            m,
		readsPolicy:        structuredList(policyItem(limits.Default)),
		writesPolicy:       structuredList(policyItem(limits.Default), policyItem(limits.Writes)),
		failuresPolicy:     structuredList(policyItem(limits.Unauthenticated)),
		testAccountsPolicy: structuredList(policyItem(limits.TestAccounts)),
	}
}

// limitFailedAuth runs before authenticate. An address whose failures used up the
// Unauthenticated quota gets 429 before its key is looked up, so a flood of wrong keys costs
// no database query and keys cannot be guessed at full speed. Failures are counted after
// authenticate answers 401; successful requests spend nothing here.
func (l *rateLimiter) limitFailedAuth(public map[string]bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if l.Limiter == nil {
			return next
		}
		return func(c echo.Context) error {
			if public[c.Path()] {
				return next(c)
			}
			p, addr := l.Unauthenticated, clientAddress(c)
			if d := l.failures.Peek(p, addr); !d.Allowed {
				l.metrics.RateLimitRefused(p.Name)
				setRateLimitHeaders(c, l.failuresPolicy, rateLimitItem(p, d))
				return &ratelimit.ExceededError{Policy: p, Decision: d}
			}
			err := next(c)
			if err != nil && isUnauthorized(err) {
				d, _ := l.failures.Allow(c.Request().Context(), p, addr)
				setRateLimitHeaders(c, l.failuresPolicy, rateLimitItem(p, d))
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

// limitAccount runs after authenticate and spends the account's Default bucket and, on
// writeRoutes, its Writes bucket, each at the account's own quota if it has one. Default is
// spent first: every request counts against it, refused writes included.
func (l *rateLimiter) limitAccount(next echo.HandlerFunc) echo.HandlerFunc {
	if l.Limiter == nil {
		return next
	}
	return func(c echo.Context) error {
		acct, ok := authenticatedAccount(c.Request().Context())
		if !ok {
			if addressRoutes[c.Request().Method+" "+c.Path()] && l.TestAccounts.Quota > 0 {
				return l.limitAddress(c, next)
			}
			return next(c) // a public route
		}
		policies, policyHeader := l.policies(acct, isWrite(c))
		span := trace.Start(c.Request().Context(), "ratelimit")
		st := stateFrom(c.Request().Context())
		items, err := l.spend(c, st.rateLimitBuf[:0], policies, acct.ID)
		span.End()
		if err != nil && !isExceeded(err) {
			return err
		}
		setRateLimitHeaders(c, policyHeader, items...)
		if err != nil {
			return err
		}
		st.rateLimits = items // for refuse
		return next(c)
	}
}

// limitAddress spends the client address's TestAccounts bucket.
func (l *rateLimiter) limitAddress(c echo.Context, next echo.HandlerFunc) error {
	items, err := l.spend(c, nil, []ratelimit.Policy{l.TestAccounts}, clientAddress(c))
	if err != nil && !isExceeded(err) {
		return err
	}
	setRateLimitHeaders(c, l.testAccountsPolicy, items...)
	if err != nil {
		return err
	}
	return next(c)
}

// isExceeded reports whether err is a refusal rather than a limiter that failed.
func isExceeded(err error) bool {
	var exceeded *ratelimit.ExceededError
	return errors.As(err, &exceeded)
}

// isWrite reports whether the request's route is one of writeRoutes.
func isWrite(c echo.Context) bool { return writeRoutes[c.Request().Method+" "+c.Path()] }

// policies are the policies a request of acct spends, Default and, for a write, Writes, and
// their RateLimit-Policy.
func (l *rateLimiter) policies(acct db.Account, write bool) ([]ratelimit.Policy, string) {
	own := accounts.QuotasOf(acct)
	def, writes := ownOrServer(l.Default, own.Default), ownOrServer(l.Writes, own.Writes)
	policies, header := []ratelimit.Policy{def, writes}, l.writesPolicy
	if !write {
		policies, header = policies[:1], l.readsPolicy
	}
	if def != l.Default || (write && writes != l.Writes) {
		header = policyList(policies) // an account's own quotas: a few test accounts' requests
	}
	return policies, header
}

// ownOrServer is the server's policy with an account's own quota, if the account has one
// within the server's: a quota stored when the server allowed more (it was reconfigured
// since) gives way to the server's, so no account is ever limited less than the server says.
func ownOrServer(server ratelimit.Policy, own ratelimit.Rate) ratelimit.Policy {
	if own.Quota == 0 || !own.Within(server.Rate) {
		return server
	}
	return ratelimit.Policy{Name: server.Name, Rate: own}
}

// spend spends one request of key under each policy in turn, up to the first that refuses
// it (a *ratelimit.ExceededError), and returns the RateLimit members of those it asked,
// appended to items.
func (l *rateLimiter) spend(c echo.Context, items []limitItem, policies []ratelimit.Policy, key string) ([]limitItem, error) {
	for _, p := range policies {
		d, err := l.Limiter.Allow(c.Request().Context(), p, key)
		if err != nil {
			return items, err
		}
		items = append(items, rateLimitItem(p, d))
		if !d.Allowed {
			l.metrics.RateLimitRefused(p.Name)
			return items, &ratelimit.ExceededError{Policy: p, Decision: d}
		}
	}
	return items, nil
}

// refuse answers a request that limitAccount let through as limitAccount answers one whose
// route's last policy (writes on a write route, default otherwise) is used up: the same
// headers, with that policy's bucket shown empty, and the same 429. It is what
// Prefer: fault=rate-limited asks for. Without a Limiter nothing was counted, so it names the
// one policy every operation spends, default, at the account's quota, shown empty.
func (l *rateLimiter) refuse(c echo.Context) error {
	acct := accountFrom(c.Request().Context())
	policies, policyHeader := l.policies(acct, isWrite(c) && l.Limiter != nil)
	p := policies[len(policies)-1]
	d := ratelimit.Decision{ResetAfter: p.Window, RetryAfter: p.Window / time.Duration(p.Quota)}
	items := stateFrom(c.Request().Context()).rateLimits
	items = append(slices.Clone(items[:min(len(items), len(policies)-1)]), rateLimitItem(p, d))
	setRateLimitHeaders(c, policyHeader, items...)
	return &ratelimit.ExceededError{Policy: p, Decision: d}
}

// setRateLimitHeaders sets RateLimit-Policy (already serialised) and RateLimit.
func setRateLimitHeaders(c echo.Context, policyHeader string, items ...limitItem) {
	header := c.Response().Header()
	header.Set("RateLimit-Policy", policyHeader)
	header.Set("RateLimit", rateLimitValue(items))
}

// policyList is the RateLimit-Policy of policies.
func policyList(policies []ratelimit.Policy) string {
	items := make([]httpsfv.Member, len(policies))
	for i, p := range policies {
		items[i] = policyItem(p)
	}
	return structuredList(items...)
}

// policyItem is one RateLimit-Policy member: `"default";q=100;w=1`.
func policyItem(p ratelimit.Policy) httpsfv.Member {
	item := httpsfv.NewItem(p.Name)
	item.Params.Add("q", int64(p.Quota))
	item.Params.Add("w", int64(p.Window/time.Second))
	return item
}

// limitItem is one RateLimit member: `"default";r=42;t=1`, r the requests left now and t
// the whole seconds until the bucket is full again (rounded up, so waiting t always suffices).
type limitItem struct {
	policy         string
	remaining, ttl int64
}

func rateLimitItem(p ratelimit.Policy, d ratelimit.Decision) limitItem {
	return limitItem{policy: p.Name, remaining: int64(d.Remaining), ttl: int64(math.Ceil(d.ResetAfter.Seconds()))}
}

// rateLimitValue serialises the RateLimit members as a structured-field list (RFC 9651),
// by hand rather than through httpsfv: it is on every response, and httpsfv allocates for
// every parameter of every member. The policy name is an sf-string; newRateLimiter has
// serialised every name through httpsfv once (a name it refuses fails at start-up), so
// quoting and escaping are all that is left to do.
func rateLimitValue(items []limitItem) string {
	b := make([]byte, 0, 32*len(items))
	for i, it := range items {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, '"')
		for j := range len(it.policy) {
			if ch := it.policy[j]; ch == '"' || ch == '\\' {
				b = append(b, '\\')
			}
			b = append(b, it.policy[j])
		}
		b = append(b, `";r=`...)
		b = strconv.AppendInt(b, it.remaining, 10)
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, it.ttl, 10)
	}
	return string(b)
}

// structuredList serialises a structured-field list (RFC 9651). Its members are built here
// from valid names and integers, so serialising cannot fail.
func structuredList(items ...httpsfv.Member) string {
	s, err := httpsfv.Marshal(httpsfv.List(items))
	if err != nil {
		panic(fmt.Sprintf("handlers: serialise structured field: %v", err))
	}
	return s
}

// rateLimitedProblem is the 429 for a refused request. RateLimit and RateLimit-Policy are
// already on the response.
func rateLimitedProblem(e *ratelimit.ExceededError) *problem {
	retryAfter := retryAfterSeconds(e.Decision.RetryAfter)
	p := newProblem(probRateLimited, rateLimitedDetail(e.Policy, retryAfter))
	p.ViolatedPolicies = []string{e.Policy.Name}
	p.Headers.Set("Retry-After", strconv.Itoa(retryAfter))
	return p
}

// retryAfterSeconds is Retry-After for a refused request: whole seconds, rounded up, and
// never 0, which clients read as "retry at once".
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// rateLimitedDetail says in words which quota a 429 refused and when to retry: "The writes
// quota of 25 requests per second is used up; retry after 1 second."
func rateLimitedDetail(p ratelimit.Policy, retryAfter int) string {
	return fmt.Sprintf("The %s quota of %s per %s is used up; retry after %s.",
		p.Name, plural(p.Quota, "request"), rateWindow(p.Window), plural(retryAfter, "second"))
}

// rateWindow names a rate's window as a person would: "second", "10 seconds", "minute", "hour".
// The largest unit that divides it is used, so 90 s stays "90 seconds".
func rateWindow(d time.Duration) string {
	unit, name := time.Second, "second"
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}} {
		if d%u.d == 0 {
			unit, name = u.d, u.name
			break
		}
	}
	if d == unit {
		return name
	}
	return plural(int(d/unit), name)
}

// plural is n of a unit, in the plural unless n is 1: "1 request", "25 requests".
func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// clientAddress is the bucket key of an unauthenticated client: the address that connected,
// as the server's IPExtractor finds it (see clientIPExtractor), never a header an
// untrusted client could vary. An IPv6 client usually holds a whole /64, so it is one client.
func clientAddress(c echo.Context) string {
	ip := c.RealIP()
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	if addr = addr.Unmap(); addr.Is6() {
		prefix, _ := addr.Prefix(64)
		return prefix.String()
	}
	return addr.String()
}

// clientIPExtractor is how echo's RealIP finds a request's client. With no trusted proxy it
// is the connection's address alone. Behind proxies (TRUSTED_PROXIES), each of which appends
// the address it saw connect to X-Forwarded-For, the client is the first address, read from
// the right, that is not one of them: the entries further left are whatever the client sent.
// Nothing else is trusted, not even loopback or private networks (echo's defaults).
func clientIPExtractor(trusted []netip.Prefix) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range trusted {
		opts = append(opts, echo.TrustIPRange(&net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}
