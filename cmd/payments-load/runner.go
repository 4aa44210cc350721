package main

import (
	"context"
	"sync"
	"time"
)

// workload is one client's request: worker says which client (each may own setup state),
// i how many it sent before. It returns an error for anything but the expected answer.
type workload func(ctx context.Context, worker, i int) error

// runSlice runs w on workers clients at once for d, each client sending one request after
// another, and at most maxPerWorker requests each: bounded in time and in count.
func runSlice(ctx context.Context, workers int, d time.Duration, maxPerWorker int, w workload) sample {
	done := make(chan struct{})
	t := time.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	return runUntil(ctx, workers, done, maxPerWorker, w)
}

// runUntil runs w as runSlice does until done is closed. Then clients start no new request
// but finish the one they are in: cutting requests off would cancel the server's queries
// mid-flight, and pgx closes a connection whose query was canceled, so the next slice would
// pay for reconnecting.
func runUntil(ctx context.Context, workers int, done <-chan struct{}, maxPerWorker int, w workload) sample {
	results := make([]sample, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for worker := range workers {
		wg.Go(func() {
			s := &results[worker]
			for i := 0; i < maxPerWorker && !closed(done) && ctx.Err() == nil; i++ {
				t0 := time.Now()
				err := w(ctx, worker, i)
				s.requests++
				if err != nil {
					s.errors++
					if s.firstErr == nil {
						s.firstErr = err
					}
					continue
				}
				s.latencies = append(s.latencies, time.Since(t0))
			}
		})
	}
	wg.Wait()
	var total sample
	for _, s := range results {
		total.merge(s)
	}
	total.elapsed = time.Since(start)
	return total
}

func closed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}
