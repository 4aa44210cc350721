package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/metrics"
)

// WaitingByQueue counts, by queue and state, the jobs waiting to run: due now (available),
// scheduled, or waiting for a retry, with how long the available job due longest has waited.
// The metrics registry calls it when /metrics is scraped (jobs_queued and
// jobs_oldest_available_age_seconds).
func WaitingByQueue(pool *pgxpool.Pool) func(context.Context) ([]metrics.QueueDepth, error) {
	return func(ctx context.Context) ([]metrics.QueueDepth, error) {
		rows, err := db.New(pool).RiverJobCountWaiting(ctx)
		if err != nil {
			return nil, fmt.Errorf("count waiting jobs: %w", err)
		}
		depths := make([]metrics.QueueDepth, len(rows))
		for i, r := range rows {
			depths[i] = metrics.QueueDepth{
				Queue: r.Queue, State: r.State, Jobs: int(r.Waiting),
				OldestDue: time.Duration(r.DueForSeconds * float64(time.Second)),
			}
		}
		return depths, nil
	}
}
