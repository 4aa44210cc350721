package handlers_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/jobs"
	"github.com/payments-api/payments-api/internal/reports"
	"github.com/payments-api/payments-api/internal/webhooks"
	"github.com/riverqueue/river"
)

// insertOnlyQueue is a River client that enqueues and cancels but never runs a job: what an
// API-only process has. Tests that need jobs to run start workers beside it.
func insertOnlyQueue(tb testing.TB, pool *pgxpool.Pool) *river.Client[pgx.Tx] {
	tb.Helper()
	client, err := jobs.NewClient(pool, jobs.Config{
		Timeout: time.Minute, RescueAfter: 2 * time.Minute, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return client
}

// startWorkers runs report builds on pool, pageSize rows per page, until the test ends or
// the returned stop is called.
func startWorkers(tb testing.TB, pool *pgxpool.Pool, pageSize int) (stop func()) {
	tb.Helper()
	return startWorkersWithTimeout(tb, pool, pageSize, time.Minute)
}

// startWorkersWithTimeout is startWorkers with a JOB_TIMEOUT of timeout.
func startWorkersWithTimeout(tb testing.TB, pool *pgxpool.Pool, pageSize int, timeout time.Duration) (stop func()) {
	tb.Helper()
	registry := river.NewWorkers()
	river.AddWorker(registry, reports.NewWorker(pool, events.NewOutbox(webhooks.NewJobQueue(insertOnlyQueue(tb, pool))), reports.DefaultRetention, pageSize))
	client, err := jobs.NewClient(pool, jobs.Config{
		Workers: 2, Timeout: timeout, RescueAfter: 2 * time.Minute, Work: true, Registry: registry,
		Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := client.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := client.Stop(ctx); err != nil { // a second Stop returns at once
			tb.Errorf("stop workers: %v", err)
		}
	}
	tb.Cleanup(stop)
	return stop
}
