package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// redisTimeout bounds one decision. Redis answers in well under a millisecond, but a busy
// host can stall any process for a moment; past this, Redis counts as down and the Fallback
// serves from memory rather than make clients wait. While it is down, only the one request a
// second that probes it can wait this long.
const redisTimeout = time.Second

// Redis is the GCRA in Redis, shared by every server process that uses the same Redis, so N
// processes together allow the configured rate, not N times it. Each decision is one atomic
// Lua script run by github.com/go-redis/redis_rate (one round trip; the clock is Redis's, so
// the processes' clocks do not matter).
type Redis struct {
	client  *redis.Client
	limiter *redis_rate.Limiter
}

// NewRedis limits through the Redis at url (redis://host:port/db). It connects lazily: an
// unreachable Redis shows up as errors from Allow, which the Fallback absorbs.
func NewRedis(url string) (*Redis, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("parse REDIS_URL: %w", err)
	}
	// Fail fast instead of queueing requests behind a Redis that does not answer.
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = redisTimeout, redisTimeout, redisTimeout
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = 1 // one retry replaces a pooled connection a Redis restart broke
	client := redis.NewClient(opts)
	return &Redis{client: client, limiter: redis_rate.NewLimiter(client)}, nil
}

// Allow spends one request of key's quota under p if one is left.
func (r *Redis) Allow(ctx context.Context, p Policy, key string) (Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	limit := redis_rate.Limit{Rate: p.Quota, Burst: p.Quota, Period: p.Window}
	// The hash tag keeps one key's buckets in one slot of a Redis Cluster.
	res, err := r.limiter.Allow(ctx, "{"+key+"}:"+p.Name, limit)
	if err != nil {
		return Decision{}, fmt.Errorf("rate limit %s in redis: %w", p.Name, err)
	}
	if res.Allowed == 0 {
		return Decision{RetryAfter: res.RetryAfter, ResetAfter: res.ResetAfter}, nil
	}
	// The script counts Remaining in float seconds and truncates, so 59.94/0.06 can come out
	// as 998.99 and then 998. Counted from ResetAfter with a microsecond's tolerance, it is
	// the exact figure the Memory limiter gives.
	full := p.emissionInterval() * time.Duration(p.Quota)
	remaining := int((full - res.ResetAfter + time.Microsecond) / p.emissionInterval())
	return Decision{Allowed: true, Remaining: remaining, ResetAfter: res.ResetAfter}, nil
}

// Close closes the connections to Redis.
func (r *Redis) Close() error { return r.client.Close() }

// LogRedisThrough sends go-redis's own log lines (one per failed dial while Redis is down)
// to logger at debug level, instead of as plain text on stderr beside the JSON logs. The
// Fallback already reports an outage once, at warn, so these add detail, not alarms.
// go-redis has one logger per process, so this sets it for every client.
func LogRedisThrough(logger *slog.Logger) {
	redis.SetLogger(redisLogger{logger})
}

type redisLogger struct{ logger *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.logger.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
