package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/jobs"
	"github.com/payments-api/payments-api/internal/reports"
	"github.com/riverqueue/river"
)

// sweepInterval is how often expired idempotency keys and reports are deleted.
const sweepInterval = time.Minute

// newJobClient registers every worker and the periodic sweep, and builds the River client:
// one that works (fetches jobs, runs the sweep when elected leader) unless PROCESS_ROLE=api.
func newJobClient(pool *pgxpool.Pool, cfg config, logger *slog.Logger, keys *idempotency.Store) (*river.Client[pgx.Tx], *reports.Service, error) {
	registry := river.NewWorkers()
	river.AddWorker(registry, reports.NewWorker(pool, cfg.ReportRetention, reports.DefaultPageSize))
	// The sweep needs the reports service, which needs the client: it is filled in below,
	// before the client can run a job.
	sweep := &jobs.SweepWorker{Logger: logger}
	river.AddWorker(registry, sweep)
	client, err := jobs.NewClient(pool, jobs.Config{
		Workers:     cfg.JobWorkers,
		Timeout:     cfg.JobTimeout,
		RescueAfter: cfg.JobRescueAfter,
		Work:        cfg.works(),
		Registry:    registry,
		Periodic:    []*river.PeriodicJob{jobs.SweepEvery(sweepInterval)},
		Logger:      logger,
	})
	if err != nil {
		return nil, nil, err
	}
	rep := reports.NewService(pool, client, cfg.ReportRetention)
	sweep.Sweeps = []jobs.Sweep{
		{Name: "idempotency keys", Run: keys.Sweep},
		{Name: "expired jobs and reports", Run: rep.SweepExpired},
	}
	return client, rep, nil
}

// stopJobs stops fetching and waits for running jobs until ctx ends; then it cancels them.
// A canceled build keeps every page it committed and is resumed by the next process, so
// nothing is lost either way; only the rest of its work is left for later.
func stopJobs(ctx context.Context, client *river.Client[pgx.Tx], logger *slog.Logger) error {
	err := client.Stop(ctx)
	if err == nil {
		return nil
	}
	logger.Warn("running jobs did not finish within SHUTDOWN_TIMEOUT; canceling them", "error", err)
	cancelCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := client.StopAndCancel(cancelCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("stop jobs: %w", err)
	}
	return nil
}
