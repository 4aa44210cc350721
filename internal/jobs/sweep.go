package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
)

// Sweep deletes one kind of expired data and says how many rows went.
type Sweep struct {
	Name string // for the log: "idempotency keys"
	Run  func(ctx context.Context) (int64, error)
}

// SweepArgs is the periodic sweep job. It carries nothing: each run sweeps everything due.
type SweepArgs struct{}

// Kind names the job in river_job.
func (SweepArgs) Kind() string { return "sweep" }

// SweepWorker runs every Sweep in turn; one failing does not stop the others.
type SweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	Sweeps []Sweep
	Logger *slog.Logger
}

// Work runs the sweeps. An error makes River retry the job; the next period runs anyway.
func (w *SweepWorker) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	var errs []error
	for _, s := range w.Sweeps {
		n, err := s.Run(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep %s: %w", s.Name, err))
			continue
		}
		if n > 0 {
			w.Logger.InfoContext(ctx, "swept", "what", s.Name, "deleted", n)
		}
	}
	return errors.Join(errs...)
}

// SweepEvery is the periodic job that enqueues a sweep every interval, and once when a
// process becomes the leader. Periodic jobs are enqueued by River's elected leader only, so
// however many processes run, one sweep runs per period (the ticker each process used to
// run swept once per process).
func SweepEvery(interval time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(
		river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil },
		&river.PeriodicJobOpts{ID: "sweep", RunOnStart: true},
	)
}
