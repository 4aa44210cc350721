package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Observer is told of every job run: *metrics.Metrics is one.
type Observer interface {
	// JobRan records one run of a job of kind: outcome is "succeeded", "failed",
	// "canceled" or "snoozed" (a webhook delivery whose retry is seconds away, or put off
	// while its endpoint has the most attempts in flight it may).
	JobRan(kind, outcome string, d time.Duration)
}

// observeRuns is the worker middleware that times every run and reports its outcome to o,
// read from what the worker returned as River reads it. A nil o needs no middleware.
func observeRuns(o Observer) []rivertype.Middleware {
	if o == nil {
		return nil
	}
	return []rivertype.Middleware{river.WorkerMiddlewareFunc(func(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
		start := time.Now()
		err := doInner(ctx)
		o.JobRan(job.Kind, runOutcome(err), time.Since(start))
		return err
	})}
}

func runOutcome(err error) string {
	var snooze *rivertype.JobSnoozeError
	var cancel *rivertype.JobCancelError
	switch {
	case err == nil:
		return "succeeded"
	case errors.As(err, &snooze):
		return "snoozed"
	case errors.As(err, &cancel):
		return "canceled"
	}
	return "failed"
}
