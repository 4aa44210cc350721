package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/handlers"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/payments"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/webhooks"
)

// sweepInterval is how often expired idempotency keys are deleted.
const sweepInterval = time.Minute

// serve migrates, seeds the demo keys and serves on ln until ctx is canceled
// (SIGINT/SIGTERM). Then it drains: the listener closes, in-flight requests finish (up to
// SHUTDOWN_TIMEOUT), background work stops, and only then is the pool closed.
func serve(ctx context.Context, cfg config, logger *slog.Logger, ln net.Listener) error {
	pool, err := db.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()

	m, err := db.NewMigrator(cfg.DatabaseURL)
	if err != nil {
		return err
	}
	if err := errors.Join(m.Up(), m.Close()); err != nil {
		return err
	}
	if err := accounts.SeedDemoKeys(ctx, db.New(pool), cfg.DemoAPIKeys); err != nil {
		return err
	}

	keys := idempotency.NewStore(pool, cfg.IdempotencyTTL)
	e, err := handlers.New(handlers.Options{
		Pool:               pool,
		Logger:             logger,
		Payments:           payments.NewService(pool, processor.Simulated{Latency: cfg.ProcessorLatency}),
		Idempotency:        keys,
		Events:             events.NewService(pool),
		Webhooks:           webhooks.NewService(pool, webhooks.URLPolicy{AllowPrivateNetworks: cfg.WebhookAllowPrivateNetworks}),
		CORSAllowedOrigins: cfg.CORSOrigins,
	})
	if err != nil {
		return err
	}
	// A slow client cannot hold a connection open for free.
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}

	background, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	sweeperDone := make(chan struct{})
	go func() {
		defer close(sweeperDone)
		keys.RunSweeper(background, sweepInterval, logger)
	}()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	logger.Info("serving", "addr", ln.Addr().String(), "demo_keys", len(cfg.DemoAPIKeys))

	select {
	case err := <-serveErr:
		stopBackground()
		<-sweeperDone
		return fmt.Errorf("serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining in-flight requests", "timeout", cfg.ShutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	stopBackground()
	<-sweeperDone
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}
