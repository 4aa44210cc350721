// Package apptest is what a test needs to build the application through internal/app as
// the process does: the server's default configuration and rate limits of its choosing.
package apptest

import (
	"time"

	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/reports"
	"github.com/payments-api/payments-api/internal/webhooks"
)

// Config is a sandbox's configuration (RUN_MODE=sandbox) on the database at url, with an
// account for each of keys. Its values are the packages' defaults, which the process's are
// tested to be (cmd/payments-api's TestTheProcessDefaultsAreThePackagesDefaults), but for
// what suits tests running side by side: two job workers rather than four, a 10 s connect
// timeout rather than 30 s, and no failover wait or statement_timeout unless a test sets
// one. Its jobs are only queued; Work runs them.
func Config(url string, keys ...string) app.Config {
	return app.Config{
		DatabaseURL:            url,
		DatabaseConnectTimeout: 10 * time.Second,
		DemoAPIKeys:            keys,
		Sandbox:                true,
		FaultInjection:         true,
		OpenTestAccounts:       true,
		IdempotencyTTL:         idempotency.DefaultTTL,
		APIKeyCacheSize:        accounts.DefaultCacheSize,
		APIKeyCacheTTL:         accounts.DefaultCacheTTL,
		WebhookRetrySchedule:   webhooks.DefaultSchedule,
		WebhookTimeout:         webhooks.DefaultTimeout,
		WebhookWorkers:         20,
		JobWorkers:             2,
		JobTimeout:             time.Minute,
		JobRescueAfter:         2 * time.Minute,
		ReportRetention:        reports.DefaultRetention,
		EventRetention:         events.DefaultRetention,
	}
}

// Limits is rate for every policy, counted in this process's memory.
func Limits(rate ratelimit.Rate) *ratelimit.Limits {
	return &ratelimit.Limits{
		Limiter:         ratelimit.NewMemory(),
		Default:         ratelimit.Policy{Name: "default", Rate: rate},
		Writes:          ratelimit.Policy{Name: "writes", Rate: rate},
		Unauthenticated: ratelimit.Policy{Name: "unauthenticated", Rate: rate},
		TestAccounts:    ratelimit.Policy{Name: "test_accounts", Rate: rate},
	}
}

// Fixed hands l to app.New, which has nothing to release.
func Fixed(l *ratelimit.Limits) app.RateLimitsFunc {
	return func(*metrics.Metrics) (*ratelimit.Limits, func(), error) { return l, func() {}, nil }
}
