// Package ratelimit is the server's rate limiting, all of it: the quotas (policies.go), the
// limiters that count them (the generic cell rate algorithm, GCRA, in Redis shared by every
// server process and in one process's memory, and a Fallback that serves from memory while
// Redis is down), the Enforcer that spends a request's buckets, the IETF RateLimit headers
// (headers.go), the words of a refusal (refusal.go) and who a client is (client.go).
// internal/handlers only adapts it to echo: it asks the Enforcer, sets the headers, and maps
// an *ExceededError to its rate-limited problem.
// It imports the standard library, echo (for its X-Forwarded-For extractor), httpsfv, the
// Redis client and redis_rate.
package ratelimit

import (
	"context"
	"time"
)

// Limiter spends one request of a key's quota under a policy. Implementations are safe for
// concurrent use.
type Limiter interface {
	// Allow spends one request of key's quota under p if one is left. A refused request
	// spends nothing.
	Allow(ctx context.Context, p Policy, key string) (Decision, error)
}

// Decision is a limiter's answer for one request.
type Decision struct {
	Allowed bool
	// Remaining is how many more requests would pass right now.
	Remaining int
	// ResetAfter is how long until the bucket is full again (Remaining == Quota).
	ResetAfter time.Duration
	// RetryAfter is how long until the next request passes: zero when Allowed.
	RetryAfter time.Duration
}
