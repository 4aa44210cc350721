package handlers

import (
	"fmt"
	"time"

	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/ratelimit"
)

// ownQuotas checks the quotas a throwaway account asks for (POST /test/accounts) against the
// server's policies of the same names. The schema has bounded each number already; only the
// server knows its own quotas. An account may be limited more than the server limits every
// account, never less, so nobody escapes the server's limits by asking.
func (l *rateLimiter) ownQuotas(asked *api.TestAccountRateLimitOverrides) (accounts.Quotas, error) {
	if asked == nil {
		return accounts.Quotas{}, nil
	}
	limits := l.Limits()
	def, err := ownQuota(limits.Default, asked.Default)
	if err != nil {
		return accounts.Quotas{}, err
	}
	writes, err := ownQuota(limits.Writes, asked.Writes)
	if err != nil {
		return accounts.Quotas{}, err
	}
	return accounts.Quotas{Default: def, Writes: writes}, nil
}

// ownQuota is the rate asked for one policy (the zero Rate when none was), or a field error
// that says which number exceeds the server's and what it may be at most, or at least.
func ownQuota(server ratelimit.Policy, asked *api.TestAccountQuota) (ratelimit.Rate, error) {
	if asked == nil {
		return ratelimit.Rate{}, nil
	}
	own := ratelimit.Rate{Quota: asked.Quota, Window: time.Duration(asked.WindowSeconds) * time.Second}
	field, serverWindow := "/rate_limits/"+server.Name, int(server.Window/time.Second)
	switch {
	case own.Quota > server.Quota:
		return ratelimit.Rate{}, &domain.ValidationError{Field: field + "/quota", Message: fmt.Sprintf(
			"must be at most %d: the server's %s quota is %d requests per %d seconds, and an account's may not be higher",
			server.Quota, server.Name, server.Quota, serverWindow)}
	case !own.Within(server.Rate):
		atLeast := (own.Quota*serverWindow + server.Quota - 1) / server.Quota // rounded up
		return ratelimit.Rate{}, &domain.ValidationError{Field: field + "/window_seconds", Message: fmt.Sprintf(
			"must be at least %d for a quota of %d: the server's %s quota is %d requests per %d seconds, and an account's may refill no faster",
			atLeast, own.Quota, server.Name, server.Quota, serverWindow)}
	}
	return own, nil
}

// accountRateLimits lists, as POST /test/accounts shows them, the quotas of an account
// whose own quotas are own: those where it has them, the server's elsewhere.
func (l *rateLimiter) accountRateLimits(own accounts.Quotas) api.TestAccountRateLimits {
	limits := l.Limits()
	return api.TestAccountRateLimits{
		Default: apiQuota(limits.Default.LimitedTo(own.Default)),
		Writes:  apiQuota(limits.Writes.LimitedTo(own.Writes)),
	}
}

func apiQuota(p ratelimit.Policy) api.TestAccountQuota {
	return api.TestAccountQuota{Quota: p.Quota, WindowSeconds: int(p.Window / time.Second)}
}
