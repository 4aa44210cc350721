package idempotency

import (
	"context"
	"fmt"

	"github.com/payments-api/payments-api/internal/db"
)

// sweepBatch keeps each DELETE short, so the sweep never holds many row locks at once.
const sweepBatch = 500

// Sweep deletes every expired key, one small batch per statement, and reports how many. The
// periodic sweep job runs it (see internal/jobs).
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
