package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/handlers"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/payments"
	"github.com/payments-api/payments-api/internal/processor"
)

// serve migrates, seeds the demo keys and serves until ctx is canceled (SIGINT/SIGTERM), then
// drains: the listener closes, in-flight requests finish (up to SHUTDOWN_TIMEOUT), and only
// then is the pool closed.
func serve(ctx context.Context, cfg config, logger *slog.Logger) error {
	pool, err := db.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()

	m, err := db.NewMigrator(cfg.DatabaseURL)
	if err != nil {
		return err
	}
	err = errors.Join(m.Up(), m.Close())
	if err != nil {
		return err
	}
	if err := accounts.SeedDemoKeys(ctx, db.New(pool), cfg.DemoAPIKeys); err != nil {
		return err
	}

	keys := idempotency.NewStore(pool, cfg.IdempotencyTTL)
	e, err := handlers.New(handlers.Options{
		Pool:        pool,
		Logger:      logger,
		Payments:    payments.NewService(pool, processor.Simulated{Latency: cfg.ProcessorLatency}),
		Idempotency: keys,
	})
	if err != nil {
		return err
	}
	go keys.RunSweeper(ctx, time.Minute, logger)
	srv := &http.Server{Addr: cfg.ListenAddr, Handler: e,
		// A slow client cannot hold a connection open for free.
		ReadHeaderTimeout: 10 * time.Second}

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.ListenAndServe() }()
	logger.Info("serving", "addr", cfg.ListenAddr, "demo_keys", len(cfg.DemoAPIKeys))

	select {
	case err := <-serveErr:
		return fmt.Errorf("listen on %s: %w", cfg.ListenAddr, err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining in-flight requests", "timeout", cfg.ShutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}
