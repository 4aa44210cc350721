package reports_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/jobs"
	"github.com/payments-api/payments-api/internal/reports"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/internal/webhooks"
	"github.com/riverqueue/river"
)

// BenchmarkReportBuild builds a payments CSV report of 10,000 and of 100,000 rows with the
// worker, as the server runs it (River, one transaction per page of 1,000 rows), and reports
// the build's time per row, from the job's started_at to its finished_at, and the largest
// heap this process had during the builds. A build linear in its rows costs the same ns/row
// at both sizes; one in flat memory has the same peak heap.
//
//	go test ./internal/reports -run '^$' -bench ReportBuild -benchtime 3x
func BenchmarkReportBuild(b *testing.B) {
	for _, rows := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			bb := setupBuild(b, rows)
			heap := watchHeap()
			var built time.Duration
			for b.Loop() {
				built += bb.build(b)
			}
			peak := heap.stop()
			b.ReportMetric(float64(built.Nanoseconds())/float64(rows*b.N), "ns/row")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		})
	}
}

type buildBundle struct {
	pool      *pgxpool.Pool
	service   *reports.Service
	done      <-chan *river.Event
	accountID string
}

// setupBuild is a database with rows payments of one account and a River client that runs
// report builds.
func setupBuild(b *testing.B, rows int) buildBundle {
	b.Helper()
	ctx := context.Background()
	pool, _ := dbtest.NewPool(b)
	bb := buildBundle{pool: pool, accountID: "acct_bench"}
	seed := []string{
		`INSERT INTO accounts (id) VALUES ('acct_bench')`,
		fmt.Sprintf(`INSERT INTO payments (id, account_id, amount, currency, status, payment_method, description, metadata, created_at)
			SELECT 'pay_' || lpad(g::text, 9, '0'), 'acct_bench', 1000 + g, 'usd', 'succeeded', 'pm_card_visa',
			       'order ' || g, jsonb_build_object('order_id', g::text), '2025-01-01'::timestamptz + g * interval '1 second'
			FROM generate_series(1, %d) g`, rows),
		`ANALYZE payments`,
	}
	for _, sql := range seed {
		if _, err := pool.Exec(ctx, sql); err != nil {
			b.Fatal(err)
		}
	}
	logger := slog.New(slog.DiscardHandler)
	inserter, err := jobs.NewClient(pool, jobs.Config{Timeout: time.Minute, RescueAfter: 2 * time.Minute, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	registry := river.NewWorkers()
	outbox := events.NewOutbox(webhooks.NewJobQueue(inserter))
	river.AddWorker(registry, reports.NewWorker(pool, outbox, reports.DefaultRetention, reports.DefaultPageSize))
	runner, err := jobs.NewClient(pool, jobs.Config{
		Workers: 1, Timeout: 10 * time.Minute, RescueAfter: 20 * time.Minute, Work: true, Registry: registry, Logger: logger,
	})
	if err != nil {
		b.Fatal(err)
	}
	done, cancel := runner.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	b.Cleanup(cancel)
	if err := runner.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stopCtx, stop := context.WithTimeout(ctx, 10*time.Second)
		defer stop()
		_ = runner.Stop(stopCtx)
	})
	bb.service, bb.done = reports.NewService(pool, inserter, reports.DefaultRetention), done
	return bb
}

// build requests a report of every payment, waits for its job to succeed and returns how
// long the build took.
func (bb buildBundle) build(b *testing.B) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var job db.Job
	err := db.InTx(ctx, bb.pool, func(tx db.Tx) error {
		var err error
		job, err = bb.service.Request(ctx, tx, bb.accountID, reports.Params{
			Type: "payments", Format: reports.FormatCSV,
			CreatedGte: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), CreatedLt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	select {
	case e := <-bb.done:
		if e.Kind != river.EventKindJobCompleted {
			b.Fatalf("report job ended %s: %v", e.Kind, e.Job.Errors)
		}
	case <-ctx.Done():
		b.Fatal("the report was not built in 10 minutes")
	}
	job, err = bb.service.GetJob(ctx, bb.accountID, job.ID)
	if err != nil || job.Status != reports.StatusSucceeded || job.StartedAt == nil || job.FinishedAt == nil {
		b.Fatalf("job after the build: %+v, %v", job, err)
	}
	return job.FinishedAt.Sub(*job.StartedAt)
}

// heapWatch samples the heap while builds run and keeps the largest value seen.
type heapWatch struct {
	stopped chan struct{}
	wg      sync.WaitGroup
	peak    uint64
}

// watchHeap starts sampling runtime.MemStats.HeapAlloc every few milliseconds, after a
// collection, so the peak is the builds' own and not what setup left behind.
func watchHeap() *heapWatch {
	runtime.GC()
	h := &heapWatch{stopped: make(chan struct{})}
	h.wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			h.peak = max(h.peak, m.HeapAlloc)
			select {
			case <-h.stopped:
				return
			case <-tick.C:
			}
		}
	})
	return h
}

// stop ends the sampling and returns the peak in bytes.
func (h *heapWatch) stop() uint64 {
	close(h.stopped)
	h.wg.Wait()
	return h.peak
}
