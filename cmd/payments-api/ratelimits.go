package main

import (
	"log/slog"

	"github.com/payments-api/payments-api/internal/handlers"
	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/payments-api/payments-api/internal/ratelimit"
)

// rateLimits builds the limits the configuration asks for: buckets in Redis, shared by every
// process, when REDIS_URL is set (with this process's memory as the fallback while Redis is
// down); in memory otherwise; no limiter at all when RATE_LIMIT_DISABLED, though the policies
// still bound the quotas a test account may ask for and shape an injected 429. release
// closes Redis.
func rateLimits(cfg config, logger *slog.Logger, m *metrics.Metrics) (limits *handlers.RateLimits, release func(), err error) {
	limits = &handlers.RateLimits{
		Default:         ratelimit.Policy{Name: "default", Rate: cfg.RateLimitDefault},
		Writes:          ratelimit.Policy{Name: "writes", Rate: cfg.RateLimitWrites},
		Unauthenticated: ratelimit.Policy{Name: "unauthenticated", Rate: cfg.RateLimitUnauthenticated},
		TestAccounts:    ratelimit.Policy{Name: "test_accounts", Rate: cfg.RateLimitTestAccounts},
	}
	release = func() {}
	switch {
	case cfg.RateLimitDisabled:
		return limits, release, nil
	case cfg.RedisURL == "":
		limits.Limiter = ratelimit.NewMemory()
		return limits, release, nil
	}
	shared, err := ratelimit.NewRedis(cfg.RedisURL)
	if err != nil {
		return nil, nil, err
	}
	ratelimit.LogRedisThrough(logger)
	limits.Limiter = ratelimit.NewFallback(shared, ratelimit.NewMemory(), logger).WithObserver(m)
	release = func() {
		if err := shared.Close(); err != nil {
			logger.Warn("close the rate-limit redis client", "error", err)
		}
	}
	return limits, release, nil
}
