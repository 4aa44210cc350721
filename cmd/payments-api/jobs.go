package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/jobs"
	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/payments-api/payments-api/internal/reports"
	"github.com/payments-api/payments-api/internal/webhooks"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/trace"
)

// sweepInterval is how often expired idempotency keys, reports and events are deleted, and
// jobs whose River job gave up without them are failed.
const sweepInterval = time.Minute

// background is the job machinery a process has: what requests and workers enqueue through,
// and the client that runs jobs.
type background struct {
	// runner fetches and runs jobs (when cfg.works()) and runs the sweep when elected leader.
	runner *river.Client[pgx.Tx]
	// outbox records events and enqueues their webhook deliveries, deliveries enqueues
	// redeliveries, and reports enqueues and cancels report builds, all in the caller's
	// transaction through an insert-only client.
	outbox     *events.Outbox
	deliveries *webhooks.JobQueue
	reports    *reports.Service
}

// newBackground builds the River clients and registers every worker and the periodic sweep.
// Enqueuing goes through a client of its own that never runs a job: the workers need the
// outbox, the outbox a client, and the running client its workers when it is built. direct,
// when not nil, is where the running client LISTENs (pool goes through a pooler).
func newBackground(pool, direct *pgxpool.Pool, cfg config, logger *slog.Logger, keys *idempotency.Store, m *metrics.Metrics, tracing trace.TracerProvider) (*background, error) {
	inserter, err := jobs.NewClient(pool, jobs.Config{
		Timeout: cfg.JobTimeout, RescueAfter: cfg.JobRescueAfter, Logger: logger, TracerProvider: tracing,
	})
	if err != nil {
		return nil, err
	}
	bg := &background{deliveries: webhooks.NewJobQueue(inserter)}
	bg.outbox = events.NewOutbox(bg.deliveries)
	bg.reports = reports.NewService(pool, inserter, cfg.ReportRetention)

	registry := river.NewWorkers()
	builds := reports.NewWorker(pool, bg.outbox, cfg.ReportRetention, reports.DefaultPageSize)
	river.AddWorker(registry, builds)
	river.AddWorker(registry, webhooks.NewWorker(newDeliverer(pool, cfg, m, tracing)))
	river.AddWorker(registry, &jobs.SweepWorker{Logger: logger, Sweeps: []jobs.Sweep{
		{Name: "idempotency keys", Run: keys.Sweep},
		{Name: "expired jobs and reports", Run: bg.reports.SweepExpired},
		{Name: "old events (with their webhook deliveries)", Run: events.NewSweeper(pool, cfg.EventRetention, events.SweepBatch).Sweep},
		{Name: "abandoned report jobs (failed)", Run: builds.FailAbandoned},
	}})
	bg.runner, err = jobs.NewClient(pool, jobs.Config{
		Workers:     cfg.JobWorkers,
		Queues:      map[string]river.QueueConfig{webhooks.QueueName: webhooks.QueueConfig(cfg.WebhookWorkers)},
		Timeout:     cfg.JobTimeout,
		RescueAfter: cfg.JobRescueAfter,
		Work:        cfg.works(),
		Registry:    registry,
		Periodic:    []*river.PeriodicJob{jobs.SweepEvery(sweepInterval)},
		Logger:      logger,
		Observer:    m,
		ListenPool:  direct,

		TracerProvider: tracing,
	})
	if err != nil {
		return nil, err
	}
	return bg, nil
}

// newDeliverer sends webhooks as WEBHOOK_TIMEOUT, WEBHOOK_ALLOW_PRIVATE_NETWORKS and
// WEBHOOK_RETRY_SCHEDULE say.
func newDeliverer(pool *pgxpool.Pool, cfg config, m *metrics.Metrics, tracing trace.TracerProvider) *webhooks.Deliverer {
	sender := webhooks.NewSender(webhooks.SenderOptions{
		Timeout: cfg.WebhookTimeout, AllowPrivateNetworks: cfg.WebhookAllowPrivateNetworks, TracerProvider: tracing,
	})
	return webhooks.NewDeliverer(pool, sender, cfg.WebhookRetrySchedule).WithObserver(m)
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
