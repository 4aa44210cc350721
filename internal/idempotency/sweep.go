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
	q := db.New(db.PlannedPerRun(s.pool)) // each batch planned for the keys it meets
	var total int64
	for {
		n, err := q.IdempotencyKeyDeleteExpired(ctx, sweepBatch)
		total += n
		if err != nil {
			return total, fmt.Errorf("sweep expired idempotency keys: %w", err)
		}
		if n < sweepBatch {
			return total, nil
		}
	}
}

// ExpireAccount makes every key of the account expire now (a test helper: the next use of a
// key runs as a new request) and reports how many did.
func (s *Store) ExpireAccount(ctx context.Context, accountID string) (int64, error) {
	n, err := db.New(s.pool).IdempotencyKeyExpireByAccount(ctx, accountID)
	if err != nil {
		return 0, fmt.Errorf("expire idempotency keys of %s: %w", accountID, err)
	}
	return n, nil
}
