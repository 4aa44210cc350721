package main

import (
	"log/slog"

	"github.com/payments-api/payments-api/internal/handlers"
	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/payments-api/payments-api/internal/ratelimit"
)

// rateLimits builds the limits the configuration asks for: none when RATE_LIMIT_DISABLED;
// buckets in Redis, shared by every process, when REDIS_URL is set (with this process's
// memory as the fallback while Redis is down); in memory otherwise. release closes Redis.
func rateLimits(cfg config, logger *slog.Logger, m *metrics.Metrics) (limits *handlers.RateLimits, release func(), err error) {
	release = func() {}
	if cfg.RateLimitDisabled {
		return nil, release, nil
	}
	var limiter ratelimit.Limiter = ratelimit.NewMemory()
	if cfg.RedisURL != "" {
		shared, err := ratelimit.NewRedis(cfg.RedisURL)
		if err != nil {
			return nil, nil, err
		}
		ratelimit.LogRedisThrough(logger)
		limiter = ratelimit.NewFallback(shared, limiter, logger).WithObserver(m)
		release = func() {
			if err := shared.Close(); err != nil {
				logger.Warn("close the rate-limit redis client", "error", err)
			}
		}
	}
	return &handlers.RateLimits{
		Limiter:         limiter,
		Default:         ratelimit.Policy{Name: "default", Rate: cfg.RateLimitDefault},
		Writes:          ratelimit.Policy{Name: "writes", Rate: cfg.RateLimitWrites},
		Unauthenticated: ratelimit.Policy{Name: "unauthenticated", Rate: cfg.RateLimitUnauthenticated},
		TestAccounts:    ratelimit.Policy{Name: "test_accounts", Rate: cfg.RateLimitTestAccounts},
	}, release, nil
}
