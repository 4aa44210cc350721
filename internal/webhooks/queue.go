package webhooks

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// QueueName is the River queue deliveries run on, apart from reports and sweeps, so a burst
// of webhooks never waits behind a long report build, nor the other way round.
const QueueName = "webhooks"

// DeliverArgs is the River job that makes one delivery's next attempt. The transaction that
// records the attempt completes it and, until the delivery is over, inserts the next
// attempt's job, scheduled for its time; a retry due within seconds is the same job,
// snoozed (jobEnd). The account rides along
// because the delivery's key is (account_id, id); the endpoint, so the worker can cap one
// endpoint's attempts in flight without reading the database. Only the delivery's id makes
// the job unique, as before the account was added: a waiting job inserted then is still
// found by a redelivery.
type DeliverArgs struct {
	AccountID  string `json:"account_id"`
	DeliveryID string `json:"delivery_id" river:"unique"`
	EndpointID string `json:"endpoint_id"`
}

// Kind names the job in river_job.
func (DeliverArgs) Kind() string { return "webhook.deliver" }

// InsertOpts puts deliveries on their own queue, one live job per delivery: a redelivery of
// a delivery whose job is still waiting (scheduled for its next retry) finds that job instead
// of adding a second one that would send the same webhook again beside it.
func (DeliverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueueName,
		MaxAttempts: maxJobAttempts,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
			rivertype.JobStateRunning, rivertype.JobStateScheduled,
		}},
	}
}

// maxJobAttempts bounds how often River runs a delivery job that fails with an error of ours
// (the database unreachable), on River's backoff, about three weeks for 25. Failed attempts
// at the receiver are not errors: they are recorded, and the retry is a job of its own or a
// snooze.
const maxJobAttempts = 25

// Inserter is the part of the River client that enqueues inside a transaction:
// *river.Client[pgx.Tx] is one.
type Inserter interface {
	InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
	JobRetryTx(ctx context.Context, tx pgx.Tx, id int64) (*rivertype.JobRow, error)
}

// JobQueue enqueues deliveries as River jobs in the caller's transaction. It is the outbox's
// events.DeliveryQueue.
type JobQueue struct {
	river Inserter
}

// NewJobQueue enqueues with client.
func NewJobQueue(client Inserter) *JobQueue {
	return &JobQueue{river: client}
}

var _ events.DeliveryQueue = (*JobQueue)(nil)

// EnqueueTx inserts one job per delivery in tx, in one statement. A delivery that already has
// a waiting job (a redelivery) has that job made due now instead. One running now goes on
// with the redelivery: the outcome of its attempt in flight counts as the redelivery's first
// attempt (Deliverer.record). A job completes in the transaction that records its attempt,
// with the next attempt's job inserted there (jobEnd), so it is never found running here
// once it can no longer see the redelivery.
func (q *JobQueue) EnqueueTx(ctx context.Context, tx db.Tx, deliveries []events.Delivery) error {
	params := make([]river.InsertManyParams, len(deliveries))
	for i, d := range deliveries {
		params[i] = river.InsertManyParams{Args: DeliverArgs{AccountID: d.AccountID, DeliveryID: d.ID, EndpointID: d.EndpointID}}
	}
	pgxTx, err := tx.PgxTx(ctx)
	if err != nil {
		return err
	}
	results, err := q.river.InsertManyTx(ctx, pgxTx, params)
	if err != nil {
		return fmt.Errorf("insert delivery jobs: %w", err)
	}
	for _, r := range results {
		if !r.UniqueSkippedAsDuplicate || r.Job.State == rivertype.JobStateRunning {
			continue
		}
		if _, err := q.river.JobRetryTx(ctx, pgxTx, r.Job.ID); err != nil {
			return fmt.Errorf("make delivery job %d due: %w", r.Job.ID, err)
		}
	}
	return nil
}
