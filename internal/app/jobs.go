package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/jobs"
	"github.com/payments-api/payments-api/internal/reports"
	"github.com/payments-api/payments-api/internal/webhooks"
	"github.com/riverqueue/river"
)

// sweepInterval is how often expired idempotency keys, reports and events are deleted, and
// jobs whose River job gave up without them are failed.
const sweepInterval = time.Minute

// background is what requests and workers enqueue through, all in the caller's transaction
// through an insert-only client, and the client that runs the jobs.
type background struct {
	outbox     *events.Outbox     // records events and enqueues their webhook deliveries
	deliveries *webhooks.JobQueue // enqueues redeliveries
	reports    *reports.Service   // enqueues and cancels report builds
	runner     *river.Client[pgx.Tx]
}

// newBackground builds the River clients and registers every worker and the periodic sweep.
// Enqueuing goes through a client of its own that never runs a job: the workers need the
// outbox, the outbox a client, and the running client its workers when it is built. The
// running client LISTENs on the direct pool when there is one (Pool goes through a pooler).
func (a *App) newBackground(keys *idempotency.Store) (*background, error) {
	cfg := a.cfg
	inserter, err := jobs.NewClient(a.Pool, jobs.Config{
		Timeout: cfg.JobTimeout, RescueAfter: cfg.JobRescueAfter, Logger: a.logger, TracerProvider: cfg.Tracing,
	})
	if err != nil {
		return nil, err
	}
	bg := &background{deliveries: webhooks.NewJobQueue(inserter)}
	bg.outbox = events.NewOutbox(bg.deliveries)
	bg.reports = reports.NewService(a.Pool, inserter, cfg.ReportRetention)

	registry := river.NewWorkers()
	builds := reports.NewWorker(a.Pool, bg.outbox, cfg.ReportRetention, reports.DefaultPageSize)
	river.AddWorker(registry, builds)
	river.AddWorker(registry, webhooks.NewWorker(a.newDeliverer()))
	river.AddWorker(registry, &jobs.SweepWorker{Logger: a.logger, Sweeps: []jobs.Sweep{
		{Name: "idempotency keys", Run: keys.Sweep},
		{Name: "expired jobs and reports", Run: bg.reports.SweepExpired},
		{Name: "old events (with their webhook deliveries)", Run: events.NewSweeper(a.Pool, cfg.EventRetention, events.SweepBatch).Sweep},
		{Name: "abandoned report jobs (failed)", Run: builds.FailAbandoned},
	}})
	bg.runner, err = jobs.NewClient(a.Pool, jobs.Config{
		Workers:     cfg.JobWorkers,
		Queues:      map[string]river.QueueConfig{webhooks.QueueName: webhooks.QueueConfig(cfg.WebhookWorkers)},
		Timeout:     cfg.JobTimeout,
		RescueAfter: cfg.JobRescueAfter,
		Work:        cfg.Work,
		Registry:    registry,
		Periodic:    []*river.PeriodicJob{jobs.SweepEvery(sweepInterval)},
		Logger:      a.logger,
		Observer:    a.Metrics,
		ListenPool:  a.direct,

		TracerProvider: cfg.Tracing,
	})
	if err != nil {
		return nil, err
	}
	return bg, nil
}

// newDeliverer sends webhooks as WEBHOOK_TIMEOUT, WEBHOOK_ALLOW_PRIVATE_NETWORKS and
// WEBHOOK_RETRY_SCHEDULE say.
func (a *App) newDeliverer() *webhooks.Deliverer {
	sender := webhooks.NewSender(webhooks.SenderOptions{
		Timeout: a.cfg.WebhookTimeout, AllowPrivateNetworks: a.cfg.WebhookAllowPrivateNetworks, TracerProvider: a.cfg.Tracing,
	})
	return webhooks.NewDeliverer(a.Pool, sender, a.cfg.WebhookRetrySchedule, a.logger).WithObserver(a.Metrics)
}

// StartJobs starts fetching and running jobs, until StopJobs. Pass a context that outlives
// the shutdown signal: the workers must finish the jobs they hold after it.
func (a *App) StartJobs(ctx context.Context) error {
	if err := a.jobs.Start(ctx); err != nil {
		return fmt.Errorf("start job workers: %w", err)
	}
	return nil
}

// canceledJobsGrace is how long the jobs canceled at the end of SHUTDOWN_TIMEOUT have to
// return: a canceled statement returns at once, and a build left mid-way is resumed later.
const canceledJobsGrace = time.Second

// StopJobs stops fetching and waits for running jobs until ctx ends; then it cancels them.
// A canceled build keeps every page it committed and is resumed by the next process, so
// nothing is lost either way; only the rest of its work is left for later.
func (a *App) StopJobs(ctx context.Context) error {
	err := a.jobs.Stop(ctx)
	if err == nil {
		return nil
	}
	// The running jobs outlasted it, or the database did not answer River's last statements
	// (it gives up leadership in one) while none was running.
	a.logger.Warn("the job workers did not stop within SHUTDOWN_TIMEOUT; canceling what they run", "error", err)
	cancelCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), canceledJobsGrace)
	defer cancel()
	if err := a.jobs.StopAndCancel(cancelCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("stop jobs: %w", err)
	}
	return nil
}
