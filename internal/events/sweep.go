package events

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
)

// DefaultRetention is how long an event, and its webhook deliveries with their attempts, is
// kept: 30 days, as Stripe keeps its event log.
const DefaultRetention = 30 * 24 * time.Hour

// SweepBatch is the most rows one statement of the sweep deletes: small enough that no
// statement holds many row locks or runs for long.
const SweepBatch = 500

// Sweeper deletes events past their retention with the webhook deliveries and attempts that
// reference them, once none of those deliveries is pending. The periodic sweep job runs it
// (see internal/jobs).
type Sweeper struct {
	pool      *pgxpool.Pool
	retention time.Duration
	batch     int32
}

// NewSweeper deletes events older than retention, at most batch rows per statement.
func NewSweeper(pool *pgxpool.Pool, retention time.Duration, batch int) *Sweeper {
	return &Sweeper{pool: pool, retention: retention, batch: int32(batch)}
}

// Sweep deletes every event created more than the retention ago and reports how many.
//
// Deliveries reference events and attempts reference deliveries, so each round deletes
// children first, in three statements over the same oldest events (see
// WebhookAttemptDeleteOfExpiredEvents): attempts, then deliveries without attempts left,
// then events without deliveries left. Every round deletes something while old events
// remain; a round that deleted no attempt nor delivery and fewer events than a batch has
// reached the last of them. Stopping early costs nothing: the next sweep carries on.
func (s *Sweeper) Sweep(ctx context.Context) (int64, error) {
	before := time.Now().Add(-s.retention)
	q := db.New(db.PlannedPerRun(s.pool)) // each batch planned for the rows it meets
	var total int64
	for {
		children, err := s.deleteChildren(ctx, q, before)
		if err != nil {
			return total, err
		}
		n, err := q.EventDeleteExpired(ctx, db.EventDeleteExpiredParams{Before: before, BatchSize: s.batch})
		total += n
		if err != nil {
			return total, fmt.Errorf("sweep events: %w", err)
		}
		if children == 0 && n < int64(s.batch) {
			return total, nil
		}
	}
}

// deleteChildren deletes one batch of attempts and one of deliveries of the oldest events
// before before, and reports how many rows went.
func (s *Sweeper) deleteChildren(ctx context.Context, q *db.Queries, before time.Time) (int64, error) {
	attempts, err := q.WebhookAttemptDeleteOfExpiredEvents(ctx, db.WebhookAttemptDeleteOfExpiredEventsParams{
		Before: before, BatchSize: s.batch,
	})
	if err != nil {
		return 0, fmt.Errorf("sweep webhook attempts of old events: %w", err)
	}
	deliveries, err := q.WebhookDeliveryDeleteOfExpiredEvents(ctx, db.WebhookDeliveryDeleteOfExpiredEventsParams{
		Before: before, BatchSize: s.batch,
	})
	if err != nil {
		return attempts, fmt.Errorf("sweep webhook deliveries of old events: %w", err)
	}
	return attempts + deliveries, nil
}
