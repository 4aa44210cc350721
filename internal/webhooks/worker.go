package webhooks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

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

// busySnooze is how long a job waits when its endpoint already has MaxInFlightPerEndpoint
// attempts in flight, spread by ±50 % so the waiting jobs do not come back together. Short,
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
// snoozed until a retry is picked up. One indexed query five times a second.
const fetchPollInterval = 200 * time.Millisecond

// QueueConfig is the webhooks queue's River configuration with workers workers.
func QueueConfig(workers int) river.QueueConfig {
	return river.QueueConfig{MaxWorkers: workers, FetchPollInterval: fetchPollInterval}
}

// Worker is the River worker of DeliverArgs: it runs Deliverer.Attempt and snoozes the job
// until the next attempt is due.
type Worker struct {
	river.WorkerDefaults[DeliverArgs]
	deliverer *Deliverer
	timeout   time.Duration
	inFlight  *endpointSlots
}

// NewWorker makes attempts with deliverer, each bounded by the sender's timeout.
func NewWorker(deliverer *Deliverer) *Worker {
	return &Worker{
		deliverer: deliverer,
		timeout:   deliverer.sender.timeout + AttemptOverhead,
		inFlight:  &endpointSlots{limit: MaxInFlightPerEndpoint, used: map[string]int{}},
	}
}

// Timeout bounds a run by one attempt instead of JOB_TIMEOUT, which is sized for reports.
func (w *Worker) Timeout(*river.Job[DeliverArgs]) time.Duration { return w.timeout }

// Work makes the delivery's next attempt. The job ends with the delivery (succeeded,
// failed, its endpoint disabled or deleted) and is otherwise snoozed until the next attempt:
// a snooze is not a failure, so River's own attempts count only errors of ours (the database
// unreachable), which it retries with backoff.
func (w *Worker) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	if !w.inFlight.acquire(job.Args.EndpointID) {
		return river.JobSnooze(time.Duration(float64(busySnooze) * (0.5 + rand.Float64())))
	}
	defer w.inFlight.release(job.Args.EndpointID)
	next, err := w.deliverer.Attempt(ctx, job.Args.AccountID, job.Args.DeliveryID, completeJob(job))
	switch {
	case errors.Is(err, errAttemptRaced):
		return nil // another run of this job made the attempt; it decides what follows
	case err != nil:
		return err
	case next == nil:
		return nil
	}
	return river.JobSnooze(max(time.Until(*next), 0))
}

// completeJob completes job in the transaction that ends its delivery (jobs.CompleteTx).
// Completed later, by River after Work returns, the job would still look alive to a
// redelivery committing in between: it would skip inserting a job (one live job per
// delivery) and leave the delivery pending with none to send it.
func completeJob(job *river.Job[DeliverArgs]) EndJob {
	return func(ctx context.Context, tx db.Tx) error {
		if err := jobs.CompleteTx(ctx, tx, job); err != nil {
			return fmt.Errorf("complete delivery job %d: %w", job.ID, err)
		}
		return nil
	}
}

// endpointSlots counts the attempts in flight per endpoint in this process.
type endpointSlots struct {
	mu    sync.Mutex
	limit int
	used  map[string]int
}

func (s *endpointSlots) acquire(endpointID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used[endpointID] >= s.limit {
		return false
	}
	s.used[endpointID]++
	return true
}

func (s *endpointSlots) release(endpointID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used[endpointID] <= 1 {
		delete(s.used, endpointID)
		return
	}
	s.used[endpointID]--
}
