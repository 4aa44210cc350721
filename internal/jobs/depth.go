package jobs

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
)

// WaitingByQueue counts, by queue, the jobs waiting to run: due now, scheduled, or waiting for
// a retry. The metrics registry calls it when /metrics is scraped (the jobs_queued gauge).
func WaitingByQueue(pool *pgxpool.Pool) func(context.Context) (map[string]int, error) {
	return func(ctx context.Context) (map[string]int, error) {
		rows, err := db.New(pool).RiverJobCountWaiting(ctx)
		if err != nil {
			return nil, fmt.Errorf("count waiting jobs: %w", err)
		}
		waiting := make(map[string]int, len(rows))
		for _, r := range rows {
			waiting[r.Queue] = int(r.Waiting)
		}
		return waiting, nil
	}
}
