package app

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/jobs"
	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/riverqueue/river"
)

// App is the built application: the handler to serve, the job client to run, and what
// they hold. Close releases it.
type App struct {
	Pool    *pgxpool.Pool
	Metrics *metrics.Metrics
	// Handler serves the API.
	Handler *echo.Echo

	cfg     Config
	logger  *slog.Logger
	direct  *pgxpool.Pool // River's LISTEN when Pool goes through a pooler; nil otherwise
	jobs    *river.Client[pgx.Tx]
	release []func() // in the order acquired; Close runs them backwards
}

// New connects to the database, migrates it, seeds the demo keys and builds every part.
// Requests still arriving when ctx ends have their bodies cut short (the server is
// draining). Nothing runs yet: serve Handler, and StartJobs when cfg.Work.
//
// What it is built from arrives three ways: a setting is a field of cfg, read by
// cmd/payments-api from the environment; the rate limits come from rateLimits, as they need
// the metrics New makes; an Option swaps a part a test needs to control (the processor).
func New(ctx context.Context, cfg Config, logger *slog.Logger, rateLimits RateLimitsFunc, opts ...Option) (_ *App, err error) {
	a := &App{cfg: cfg, logger: logger}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if err := a.openDatabase(ctx); err != nil {
		return nil, err
	}
	a.Metrics = metrics.New(a.Pool)
	a.Metrics.CountJobsOnScrape(jobs.WaitingByQueue(a.Pool))
	limits, releaseLimits, err := rateLimits(a.Metrics)
	if err != nil {
		return nil, err
	}
	a.release = append(a.release, releaseLimits)
	o := newOptions(cfg, opts)
	keys := idempotency.NewStore(a.Pool, cfg.IdempotencyTTL).WithObserver(a.Metrics)
	bg, err := a.newBackground(keys)
	if err != nil {
		return nil, err
	}
	a.jobs = bg.runner
	if a.Handler, err = a.newHandler(ctx, limits, keys, bg, o.processor); err != nil {
		return nil, err
	}
	return a, nil
}

// Close releases what New acquired, the pools last. Stop the jobs first (StopJobs): a job
// still running needs its pool.
func (a *App) Close() {
	for _, release := range slices.Backward(a.release) {
		release()
	}
}

// migrateAndSeed brings the schema up to date and gives each demo key its account.
func (a *App) migrateAndSeed(ctx context.Context) error {
	m, err := db.NewMigrator(a.cfg.DirectDatabaseURL())
	if err != nil {
		return err
	}
	if err := errors.Join(m.Up(), m.Close()); err != nil {
		return err
	}
	return accounts.SeedDemoKeys(ctx, a.Pool, a.cfg.DemoAPIKeys)
}
