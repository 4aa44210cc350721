package ratelimit

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// probeInterval is how often a Fallback tries its primary again while it is down.
const probeInterval = time.Second

// Fallback decides with its primary (Redis) and, while the primary fails, with its backup
// (memory), so a Redis outage degrades the limits to per-process ones instead of failing
// requests. The switch is logged once each way. While down, one request per probeInterval
// tries the primary again; the first that succeeds switches back.
type Fallback struct {
	primary, backup Limiter
	logger          *slog.Logger
	observer        FallbackObserver
	probeEvery      time.Duration
	health          *health // shared by the copies WithObserver makes: they front one primary
}

// health is whether a Fallback's primary is down, and when to try it again.
type health struct {
	down      atomic.Bool
	nextProbe atomic.Int64 // unix nanoseconds: when a request may try the primary again
}

// FallbackObserver is told of every decision the backup makes because the primary failed
// (the metrics package implements it), so this package counts without knowing how counts
// are exported.
type FallbackObserver interface {
	RateLimitFellBack()
}

// NewFallback decides with primary, and with backup while primary fails.
func NewFallback(primary, backup Limiter, logger *slog.Logger) *Fallback {
	return &Fallback{primary: primary, backup: backup, logger: logger, probeEvery: probeInterval, health: &health{}}
}

// WithObserver returns a copy of f that tells o of every decision made by the backup; f is
// unchanged. A nil o tells no one.
func (f *Fallback) WithObserver(o FallbackObserver) *Fallback {
	cp := *f
	cp.observer = o
	return &cp
}

// Allow spends one request of key's quota under p, in the primary if it answers.
func (f *Fallback) Allow(ctx context.Context, p Policy, key string) (Decision, error) {
	if f.usePrimary() {
		d, err := f.primary.Allow(ctx, p, key)
		if err == nil {
			f.recovered(ctx)
			return d, nil
		}
		if ctx.Err() != nil {
			return Decision{}, err // the client went away; the primary is not to blame
		}
		f.failed(ctx, err)
	}
	if f.observer != nil {
		f.observer.RateLimitFellBack()
	}
	return f.backup.Allow(ctx, p, key)
}

// Degraded reports whether decisions are being made by the backup.
func (f *Fallback) Degraded() bool { return f.health.down.Load() }

// usePrimary is true while the primary is up, and for one request per probeInterval while
// it is down.
func (f *Fallback) usePrimary() bool {
	if !f.health.down.Load() {
		return true
	}
	next := f.health.nextProbe.Load()
	now := time.Now().UnixNano()
	return now >= next && f.health.nextProbe.CompareAndSwap(next, now+int64(f.probeEvery))
}

func (f *Fallback) failed(ctx context.Context, err error) {
	if f.health.down.CompareAndSwap(false, true) {
		f.health.nextProbe.Store(time.Now().Add(f.probeEvery).UnixNano())
		f.logger.WarnContext(ctx, "rate limits: redis failed; limiting in this process's memory until it answers", "error", err)
	}
}

func (f *Fallback) recovered(ctx context.Context) {
	if f.health.down.CompareAndSwap(true, false) {
		f.logger.InfoContext(ctx, "rate limits: redis answers again; limits are shared again")
	}
}
