package webhooks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/jobs"
	"github.com/riverqueue/river"
)

// MaxInFlightPerEndpoint caps the attempts one process makes to one endpoint at once.
//
// A receiver that hangs holds each attempt for the whole WEBHOOK_TIMEOUT, and with it a
// worker of the webhooks queue. Without a cap, fifty deliveries queued for a hung endpoint
// would take every worker, and every other customer's webhooks would wait behind them. With
// it, a hung endpoint holds at most this many workers; its other jobs are snoozed briefly
// (snoozing does not use up a job's attempts, and a snoozed job goes behind the jobs already
// due, so other endpoints' deliveries are fetched first). The queue then stays open to other
// endpoints until WEBHOOK_WORKERS / MaxInFlightPerEndpoint endpoints hang at once.
//
// The cap is per process, not global: what it protects is each process's workers, and
// counting in memory costs no query per attempt. N processes make at most N times this many
// attempts to one endpoint at once, as a receiver behind a load balancer expects anyway.
// (River's own per-partition concurrency limits are a feature of its paid edition.)
const MaxInFlightPerEndpoint = 2

// MaxInFlightPerAccount caps the attempts one process makes to one account's endpoints at
// once. The per-endpoint cap alone leaves the queue to an account with many endpoints: ten
// hung ones, at two attempts each, take the default twenty workers, and three payments
// fanned out to forty queue work for minutes. With both caps, one account holds at most this
// many workers, and the queue stays open to other accounts until WEBHOOK_WORKERS /
// MaxInFlightPerAccount accounts' receivers hang at once. Its jobs beyond the cap are
// snoozed like an endpoint's.
const MaxInFlightPerAccount = 4

// busySnooze is how long a job waits when its endpoint or its account already has as many
// attempts in flight as its cap allows, spread by ±50 % so the waiting jobs do not come back together. Short,
// so a busy but healthy endpoint's burst still drains quickly once its attempts return.
const busySnooze = time.Second

// AttemptOverhead is what an attempt may take beyond sending: reading the delivery before,
// recording the attempt after. A job's timeout is WEBHOOK_TIMEOUT plus this.
const AttemptOverhead = 5 * time.Second

// fetchPollInterval is how often the webhooks queue looks for due jobs besides River's
// insert notifications (LISTEN/NOTIFY), which start most first attempts within milliseconds
// of the commit. Some inserts are still found only by a poll (a notification within the
// client's fetch cooldown of another, or one handled before its fetch could see the job), so
// the poll bounds a first attempt's delay to about its interval. It is also when a job
// snoozed until a retry within seconds is picked up. One indexed query five times a second.
const fetchPollInterval = 200 * time.Millisecond

// QueueConfig is the webhooks queue's River configuration with workers workers.
func QueueConfig(workers int) river.QueueConfig {
	return river.QueueConfig{MaxWorkers: workers, FetchPollInterval: fetchPollInterval}
}

// Worker is the River worker of DeliverArgs: it runs Deliverer.Attempt, one attempt per run
// (see Work).
type Worker struct {
	river.WorkerDefaults[DeliverArgs]
	deliverer *Deliverer
	timeout   time.Duration
	accounts  *slots // attempts in flight per account
	endpoints *slots // and per endpoint
}

// NewWorker makes attempts with deliverer, each bounded by the sender's timeout.
func NewWorker(deliverer *Deliverer) *Worker {
	return &Worker{
		deliverer: deliverer,
		timeout:   deliverer.sender.timeout + AttemptOverhead,
		accounts:  &slots{limit: MaxInFlightPerAccount, used: map[string]int{}},
		endpoints: &slots{limit: MaxInFlightPerEndpoint, used: map[string]int{}},
	}
}

// Timeout bounds a run by one attempt instead of JOB_TIMEOUT, which is sized for reports.
func (w *Worker) Timeout(*river.Job[DeliverArgs]) time.Duration { return w.timeout }

// Work makes the delivery's next attempt. The transaction that records it decides what
// follows (jobEnd): when the delivery is over, or its next attempt is more than shortWait
// away, it completes the job there, and inserts the next attempt's job, scheduled for its
// time; otherwise Work snoozes the job until the next attempt. River's own attempts count
// only errors of ours (the database unreachable), which it retries with backoff.
func (w *Worker) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	if !w.accounts.acquire(job.Args.AccountID) {
		return busy()
	}
	defer w.accounts.release(job.Args.AccountID)
	if !w.endpoints.acquire(job.Args.EndpointID) {
		return busy()
	}
	defer w.endpoints.release(job.Args.EndpointID)
	end := &jobEnd{job: job}
	next, err := w.deliverer.Attempt(ctx, job.Args.AccountID, job.Args.DeliveryID, end.end)
	switch {
	case errors.Is(err, errAttemptRaced):
		return nil // another run of this job made the attempt; it decides what follows
	case err != nil:
		return err
	case end.ended || next == nil:
		return nil
	}
	return river.JobSnooze(max(time.Until(*next), 0))
}

// busy snoozes a job whose account or endpoint has all the attempts in flight its cap allows.
func busy() error {
	return river.JobSnooze(time.Duration(float64(busySnooze) * (0.5 + rand.Float64())))
}

// shortWait is River's scheduler interval. A job snoozed for no longer is available at once
// and runs at its time; a job inserted for a later time waits for the scheduler to make it
// available, up to this much late.
const shortWait = 5 * time.Second

// jobEnd ends a delivery's job in the transaction that decides what follows its attempt,
// unless the next attempt is at most shortWait away: it completes the job
// (jobs.CompleteTx) and, when another attempt is to come, inserts the job that makes it.
// Ended later, by River after Work returns (completed, or snoozed until the next attempt),
// the job would still look alive to a redelivery committing in between, which leaves a
// running job be: the delivery would be left with no job, or wait for the old job's time,
// hours away, rather than be sent now. A job left running for a short wait delays such a
// redelivery by that wait at most.
type jobEnd struct {
	job   *river.Job[DeliverArgs]
	ended bool // the job was completed in the transaction
}

func (e *jobEnd) end(ctx context.Context, tx db.Tx, next *time.Time) error {
	if next != nil && time.Until(*next) <= shortWait {
		return nil // Work snoozes the job
	}
	if err := jobs.CompleteTx(ctx, tx, e.job); err != nil {
		return fmt.Errorf("complete delivery job %d: %w", e.job.ID, err)
	}
	e.ended = true
	if next == nil {
		return nil
	}
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return err
	}
	pgxTx, err := tx.PgxTx(ctx)
	if err != nil {
		return err
	}
	if _, err := client.InsertTx(ctx, pgxTx, e.job.Args, &river.InsertOpts{ScheduledAt: *next}); err != nil {
		return fmt.Errorf("enqueue the next attempt of delivery %s: %w", e.job.Args.DeliveryID, err)
	}
	return nil
}

// slots counts the attempts in flight in this process per id (of an endpoint, or of an
// account), up to limit each.
type slots struct {
	mu    sync.Mutex
	limit int
	used  map[string]int
}

func (s *slots) acquire(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used[id] >= s.limit {
		return false
	}
	s.used[id]++
	return true
}

func (s *slots) release(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used[id] <= 1 {
		delete(s.used, id)
		return
	}
	s.used[id]--
}
