package ratelimit

// Policy is a named rate. The name is what clients see in the RateLimit headers and in a
// 429, and it separates the buckets: the same key has one bucket per policy.
type Policy struct {
	Name string
	Rate
}

// The server's policies, by the names clients see.
const (
	PolicyDefault         = "default"
	PolicyWrites          = "writes"
	PolicyUnauthenticated = "unauthenticated"
	PolicyTestAccounts    = "test_accounts"
)

// Limits are the quotas the server enforces.
type Limits struct {
	// Limiter holds the per-account buckets: in Redis, shared by every process, when one is
	// configured. Nil counts nothing and sends no rate-limit headers (RATE_LIMIT_DISABLED);
	// the policies below then still bound the quotas a throwaway account may ask for, and
	// shape the 429 that Prefer: fault=rate-limited answers.
	Limiter Limiter
	// Default counts every authenticated request; Writes also counts the operations that
	// move money or start jobs. An account may carry lower quotas of its own for both
	// (AccountRates).
	Default, Writes Policy
	// Unauthenticated counts, per client address, the requests that fail authentication. It
	// lives in this process's memory: it is checked before the key lookup on every request,
	// and a shared check would add a Redis round trip to every one.
	Unauthenticated Policy
	// TestAccounts counts, per client address, the throwaway accounts created, in Limiter.
	// A zero quota leaves them unlimited.
	TestAccounts Policy

	redis *Redis // the client New opened, if any
}

// Close releases what New opened (the connections to Redis); Limits built by hand hold
// nothing to release.
func (l *Limits) Close() error {
	if l.redis == nil {
		return nil
	}
	return l.redis.Close()
}

// AccountRates are an account's own rates for the per-account policies, in place of the
// server's; a zero Rate is the server's.
type AccountRates struct {
	Default, Writes Rate
}

// LimitedTo is p at an account's own rate, if the account has one within p's: a rate stored
// when the server allowed more (it was reconfigured since) gives way to p's, so no account
// is ever limited less than the server says.
func (p Policy) LimitedTo(own Rate) Policy {
	if own.Quota == 0 || !own.Within(p.Rate) {
		return p
	}
	return Policy{Name: p.Name, Rate: own}
}
