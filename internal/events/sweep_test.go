package events_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// retention is the sweeps' retention in these tests; old rows are a day past it.
const retention = 30 * 24 * time.Hour

const old, fresh = retention + 24*time.Hour, time.Hour

type sweepBundle struct {
	pool      *pgxpool.Pool
	rec       *dbtest.Recorder
	accountID string
}

// setupSweep is a fresh database with one account, on a pool that records its statements.
func setupSweep(t *testing.T) sweepBundle {
	t.Helper()
	pool, rec := dbtest.NewRecordedPool(t)
	return withAccount(t, sweepBundle{pool: pool, rec: rec})
}

// withAccount seeds the bundle's database with one account and records its id.
func withAccount(t *testing.T, b sweepBundle) sweepBundle {
	t.Helper()
	ctx := bounded(t)
	if err := accounts.SeedDemoKeys(ctx, b.pool, []string{"sk_test_sweep"}); err != nil {
		t.Fatal(err)
	}
	if err := b.pool.QueryRow(ctx, `SELECT id FROM accounts`).Scan(&b.accountID); err != nil {
		t.Fatal(err)
	}
	return b
}

// bounded is the test's context with a deadline, so a sweep that waits on a lock fails its
// test instead of hanging the package.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// exec runs one fixture statement.
func (b sweepBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := b.pool.Exec(bounded(t), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// events inserts n events created age ago and returns their ids.
func (b sweepBundle) events(t *testing.T, n int, age time.Duration) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = domain.NewID("evt")
		b.exec(t, `INSERT INTO events (id, account_id, type, data, created_at) VALUES ($1, $2, 'payment.succeeded', '{}', now() - $3::interval)`,
			ids[i], b.accountID, age)
	}
	return ids
}

// endpoint inserts a webhook endpoint and returns its id.
func (b sweepBundle) endpoint(t *testing.T) string {
	t.Helper()
	id := domain.NewID("we")
	b.exec(t, `INSERT INTO webhook_endpoints (id, account_id, url, enabled_events, secret) VALUES ($1, $2, 'https://93.184.215.14/hook', '{*}', 'whsec_c2VjcmV0')`,
		id, b.accountID)
	return id
}

// delivery inserts a delivery of the event to the endpoint, created age ago, with attempts
// attempts.
func (b sweepBundle) delivery(t *testing.T, eventID, endpointID string, age time.Duration, attempts int) {
	t.Helper()
	id := domain.NewID("msg")
	b.exec(t, `INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id, status, next_attempt_at, created_at)
		VALUES ($1, $2, $3, $4, 'succeeded', NULL, now() - $5::interval)`, id, b.accountID, endpointID, eventID, age)
	b.exec(t, `INSERT INTO webhook_attempts (account_id, delivery_id, attempt, attempted_at, duration_ms, response_status)
		SELECT $4, $1, g, now() - $2::interval, 10, 200 FROM generate_series(1, $3::int) g`, id, age, attempts, b.accountID)
}

// ids lists a table's ids (delivery_id for attempts), sorted.
func (b sweepBundle) ids(t *testing.T, query string) []string {
	t.Helper()
	rows, err := b.pool.Query(bounded(t), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// checkBatches fails when a statement of the sweep's query deleted more than batch rows,
// or its statements together other than total: rows left to a cascade would be missing.
func checkBatches(t *testing.T, rec *dbtest.Recorder, query string, batch, total int64) {
	t.Helper()
	var sum int64
	for i, s := range rec.Named(query) {
		sum += s.Rows
		if s.Rows > batch {
			t.Errorf("%s statement %d deleted %d rows, more than a batch of %d", query, i+1, s.Rows, batch)
		}
	}
	if sum != total {
		t.Errorf("%s deleted %d rows in all, want %d", query, sum, total)
	}
}

// TestSweepDeletesOldEventsInBatches: ten events past the retention go, three per statement
// (four statements), and the recent ones stay.
func TestSweepDeletesOldEventsInBatches(t *testing.T) {
	t.Parallel()
	b := setupSweep(t)
	b.events(t, 10, old)
	kept := b.events(t, 5, fresh)
	slices.Sort(kept)
	b.rec.Reset()

	n, err := events.NewSweeper(b.pool, retention, 3).Sweep(bounded(t))
	if err != nil || n != 10 {
		t.Fatalf("Sweep = %d, %v; want 10", n, err)
	}
	if left := b.ids(t, `SELECT id FROM events`); !slices.Equal(left, kept) {
		t.Errorf("events left: %v, want the recent %v", left, kept)
	}
	var rows []int64
	for _, s := range b.rec.Named("EventDeleteExpired") {
		rows = append(rows, s.Rows)
	}
	if want := []int64{3, 3, 3, 1}; !slices.Equal(rows, want) {
		t.Errorf("event deletes removed %v rows, want %v: batches of 3", rows, want)
	}
	if n, err := events.NewSweeper(b.pool, retention, 3).Sweep(bounded(t)); err != nil || n != 0 {
		t.Errorf("second Sweep = %d, %v; want 0", n, err)
	}
}

// TestSweepDeletesDeliveriesAndAttemptsWithTheirEvent: an old event goes with its deliveries
// and their attempts, a redelivery made recently included; a recent event keeps its own. No
// statement deletes more than a batch, though the old events have 27 children.
func TestSweepDeletesDeliveriesAndAttemptsWithTheirEvent(t *testing.T) {
	t.Parallel()
	b := setupSweep(t)
	first, second := b.endpoint(t), b.endpoint(t)
	olds := b.events(t, 4, old)
	for _, id := range olds {
		b.delivery(t, id, first, old, 3)
	}
	b.delivery(t, olds[0], second, fresh, 7) // redelivered yesterday to a new endpoint
	recent := b.events(t, 1, fresh)
	b.delivery(t, recent[0], first, fresh, 2)
	b.rec.Reset()

	n, err := events.NewSweeper(b.pool, retention, 3).Sweep(bounded(t))
	if err != nil || n != 4 {
		t.Fatalf("Sweep = %d, %v; want 4", n, err)
	}
	if left := b.ids(t, `SELECT event_id FROM webhook_deliveries`); !slices.Equal(left, recent) {
		t.Errorf("deliveries left are of events %v, want only the recent event's %v", left, recent)
	}
	attempts := b.ids(t, `SELECT d.event_id FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id`)
	if want := []string{recent[0], recent[0]}; !slices.Equal(attempts, want) {
		t.Errorf("attempts left are of events %v, want the recent event's two", attempts)
	}
	checkBatches(t, b.rec, "WebhookAttemptDeleteOfExpiredEvents", 3, 4*3+7)
	checkBatches(t, b.rec, "WebhookDeliveryDeleteOfExpiredEvents", 3, 5)
	checkBatches(t, b.rec, "EventDeleteExpired", 3, 4)
}

// TestSweepKeepsAnEventStillBeingDelivered: an old event whose delivery is still pending (a
// retry pushed late, a redelivery) keeps the delivery, its attempts and itself until the
// delivery ends; its neighbours go as usual.
func TestSweepKeepsAnEventStillBeingDelivered(t *testing.T) {
	t.Parallel()
	b := setupSweep(t)
	endpoint := b.endpoint(t)
	olds := b.events(t, 3, old)
	for _, id := range olds {
		b.delivery(t, id, endpoint, old, 2)
	}
	b.exec(t, `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now() + interval '1 hour' WHERE event_id = $1`, olds[1])

	n, err := events.NewSweeper(b.pool, retention, 2).Sweep(bounded(t))
	if err != nil || n != 2 {
		t.Fatalf("Sweep = %d, %v; want 2", n, err)
	}
	kept := []string{olds[1]}
	if left := b.ids(t, `SELECT id FROM events`); !slices.Equal(left, kept) {
		t.Errorf("events left %v, want the one still being delivered, %v", left, kept)
	}
	if left := b.ids(t, `SELECT d.event_id FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id`); !slices.Equal(left, []string{olds[1], olds[1]}) {
		t.Errorf("attempts left are of events %v, want the pending delivery's two", left)
	}
	b.exec(t, `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL`)
	if n, err := events.NewSweeper(b.pool, retention, 2).Sweep(bounded(t)); err != nil || n != 1 {
		t.Errorf("Sweep once the delivery failed = %d, %v; want 1", n, err)
	}
}

// TestSweepReadsOnlyOldEvents: the sweep first runs on empty tables; once live events, their
// deliveries and attempts fill them, a batch still reads only the old events and the rows
// that reference them, never a whole table. The pool's one connection would keep a plan made
// on the empty tables (db.Open forces generic plans); db.PlannedPerRun plans every batch for
// the rows it meets.
func TestSweepReadsOnlyOldEvents(t *testing.T) {
	t.Parallel()
	ctx := bounded(t)
	tables := []string{"events", "webhook_deliveries", "webhook_attempts"}
	pool := dbtest.NewPlanningPool(t, ctx, tables...)
	b := withAccount(t, sweepBundle{pool: pool})
	sweeper := events.NewSweeper(pool, retention, events.SweepBatch)
	if _, err := sweeper.Sweep(ctx); err != nil { // planned on the empty tables
		t.Fatal(err)
	}
	const live, expired = 100_000, 600 // more old events than one batch
	endpoint := b.endpoint(t)
	b.exec(t, `INSERT INTO events (id, account_id, type, data, created_at)
		SELECT 'evt_' || lpad(g::text, 26, '0'), $1, 'payment.succeeded', '{}',
		       now() - CASE WHEN g <= $2 THEN $3::interval ELSE $4::interval END
		FROM generate_series(1, $5::int) g`, b.accountID, expired, old, fresh, live+expired)
	b.exec(t, `INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id, status, next_attempt_at, created_at)
		SELECT 'msg_' || substr(id, 5), account_id, $1, id, 'succeeded', NULL, created_at FROM events`, endpoint)
	b.exec(t, `INSERT INTO webhook_attempts (account_id, delivery_id, attempt, attempted_at, duration_ms, response_status)
		SELECT account_id, id, 1, created_at, 10, 200 FROM webhook_deliveries`)

	dbtest.NoSeqScans(t, ctx, pool, tables, func() {
		n, err := sweeper.Sweep(ctx)
		if err != nil || n != expired {
			t.Fatalf("swept %d events (%v), want %d", n, err, expired)
		}
	})
}
