package main

import (
	"log/slog"

	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/payments-api/payments-api/internal/ratelimit"
)

// rateLimits builds the limits the configuration asks for (see ratelimit.New); release
// closes their connections to Redis.
func rateLimits(cfg config, logger *slog.Logger, m *metrics.Metrics) (limits *ratelimit.Limits, release func(), err error) {
	limits, err = ratelimit.New(ratelimit.Config{
		Default:         cfg.RateLimitDefault,
		Writes:          cfg.RateLimitWrites,
		Unauthenticated: cfg.RateLimitUnauthenticated,
		TestAccounts:    cfg.RateLimitTestAccounts,
		RedisURL:        cfg.RedisURL,
		Disabled:        cfg.RateLimitDisabled,
	}, logger, m)
	if err != nil {
		return nil, nil, err
	}
	release = func() {
		if err := limits.Close(); err != nil {
			logger.Warn("close the rate-limit redis client", "error", err)
		}
	}
	return limits, release, nil
}
