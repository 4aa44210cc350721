package accounts

import (
	"time"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/ratelimit"
)

// Quotas are the rate-limit quotas an account carries in place of the server's, for the two
// per-account policies: a throwaway account's, asked for when it was made (POST
// /test/accounts). A zero Rate is the server's. The rate limiter uses an account's own quota
// only while it is within the server's (ratelimit.Rate.Within), so it can only limit more.
type Quotas struct {
	Default, Writes ratelimit.Rate
}

// QuotasOf reads an account's own quotas from its row, which the authenticated account
// carries: the rate limiter needs no query of its own.
func QuotasOf(acct db.Account) Quotas {
	return Quotas{
		Default: storedRate(acct.RateLimitDefaultQuota, acct.RateLimitDefaultWindowSeconds),
		Writes:  storedRate(acct.RateLimitWritesQuota, acct.RateLimitWritesWindowSeconds),
	}
}

// storedRate is a rate from its two columns, or the zero Rate when they are NULL.
func storedRate(quota, windowSeconds *int32) ratelimit.Rate {
	if quota == nil || windowSeconds == nil {
		return ratelimit.Rate{}
	}
	return ratelimit.Rate{Quota: int(*quota), Window: time.Duration(*windowSeconds) * time.Second}
}

// rateColumns is a rate as its two columns: NULL for the zero Rate.
func rateColumns(r ratelimit.Rate) (quota, windowSeconds *int32) {
	if r.Quota == 0 {
		return nil, nil
	}
	q, w := int32(r.Quota), int32(r.Window/time.Second)
	return &q, &w
}
