package app

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/handlers"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/payments"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/webhooks"
)

// newHandler builds the services and the echo instance that serves them. draining ends
// when the server starts shutting down.
func (a *App) newHandler(draining context.Context, limits *ratelimit.Limits, keys *idempotency.Store, bg *background, proc processor.Processor) (*echo.Echo, error) {
	cfg := a.cfg
	apiKeys, err := accounts.NewAuthenticator(db.Reads(a.Pool), cfg.APIKeyCacheSize, cfg.APIKeyCacheTTL)
	if err != nil {
		return nil, err
	}
	if !cfg.Sandbox {
		apiKeys = apiKeys.OnlyKeys(cfg.DemoAPIKeys)
	}
	pays := payments.NewService(a.Pool, proc, bg.outbox)
	a.release = append(a.release, pays.Close) // before the pool closes: its shared reads would hold it
	// /readyz pings through a pool of one connection of its own, opened on its first ping, so
	// that a pool lent out to requests does not read as a database that is down.
	readiness := a.Pool.Config().Copy()
	readiness.MaxConns, readiness.MinConns = 1, 0
	ping, err := pgxpool.NewWithConfig(context.Background(), readiness)
	if err != nil {
		return nil, err
	}
	a.release = append(a.release, ping.Close)
	return handlers.New(handlers.Options{
		Pool:               a.Pool,
		Readiness:          ping.Ping,
		Logger:             a.logger,
		Payments:           pays,
		Idempotency:        keys,
		Events:             events.NewService(a.Pool),
		Webhooks:           webhooks.NewService(a.Pool, webhooks.URLPolicy{AllowPrivateNetworks: cfg.WebhookAllowPrivateNetworks}, bg.deliveries),
		CORSAllowedOrigins: cfg.CORSOrigins,
		RequestTimeout:     cfg.RequestTimeout,
		FailoverWait:       cfg.DatabaseFailoverWait,
		Draining:           draining,
		RateLimits:         limits,
		APIKeys:            apiKeys,
		Metrics:            a.Metrics,
		Reports:            bg.reports,
		Sandbox:            cfg.Sandbox,
		FaultInjection:     cfg.FaultInjection,
		OpenTestAccounts:   cfg.OpenTestAccounts,
		TrustedProxies:     cfg.TrustedProxies,
		TracerProvider:     cfg.Tracing,
	})
}
