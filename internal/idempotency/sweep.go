package idempotency

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/payments-api/payments-api/internal/db"
)

// sweepBatch keeps each DELETE short, so the sweep never holds many row locks at once.
const sweepBatch = 500

// Sweep deletes every expired key, one small batch per statement, and reports how many.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	var total int64
	for {
		n, err := db.New(s.pool).IdempotencyKeyDeleteExpired(ctx, sweepBatch)
		total += n
		if err != nil {
			return total, fmt.Errorf("sweep expired idempotency keys: %w", err)
		}
		if n < sweepBatch {
			return total, nil
		}
	}
}

// RunSweeper sweeps every interval until ctx is canceled.
func (s *Store) RunSweeper(ctx context.Context, interval time.Duration, logger *slog.Logger) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			n, err := s.Sweep(ctx)
			if err != nil {
				logger.ErrorContext(ctx, "idempotency sweep", "error", err)
			} else if n > 0 {
				logger.InfoContext(ctx, "idempotency sweep", "deleted", n)
			}
		}
	}
}
