package ratelimit

import "log/slog"

// Config is the operator's choice of limits, as plain values.
type Config struct {
	Default, Writes, Unauthenticated, TestAccounts Rate
	// RedisURL shares the buckets between server processes; empty keeps them in this one.
	RedisURL string
	// Disabled counts nothing (see Limits.Limiter).
	Disabled bool
}

// New builds the limits cfg asks for: buckets in Redis, shared by every process, when
// RedisURL is set (with this process's memory as the fallback while Redis is down, each
// fallback decision told to observer, which may be nil); in memory otherwise; no Limiter at
// all when Disabled, though the policies still bound the quotas a test account may ask for
// and shape an injected 429. Close the Limits to release Redis.
func New(cfg Config, logger *slog.Logger, observer FallbackObserver) (*Limits, error) {
	limits := &Limits{
		Default:         Policy{Name: PolicyDefault, Rate: cfg.Default},
		Writes:          Policy{Name: PolicyWrites, Rate: cfg.Writes},
		Unauthenticated: Policy{Name: PolicyUnauthenticated, Rate: cfg.Unauthenticated},
		TestAccounts:    Policy{Name: PolicyTestAccounts, Rate: cfg.TestAccounts},
	}
	switch {
	case cfg.Disabled:
		return limits, nil
	case cfg.RedisURL == "":
		limits.Limiter = NewMemory()
		return limits, nil
	}
	shared, err := NewRedis(cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	LogRedisThrough(logger)
	limits.Limiter = NewFallback(shared, NewMemory(), logger).WithObserver(observer)
	limits.redis = shared
	return limits, nil
}
