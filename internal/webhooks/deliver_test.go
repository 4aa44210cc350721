package webhooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/jobs"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/internal/testing/integration"
	"github.com/payments-api/payments-api/internal/webhooks"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertest"
)

// deliverBundle is a database with one account, one endpoint at a test receiver and one
// event queued for it.
type deliverBundle struct {
	pool       *pgxpool.Pool
	queue      *river.Client[pgx.Tx] // inserts jobs; never started, so it works none
	service    *webhooks.Service
	outbox     *events.Outbox
	deliverer  *webhooks.Deliverer
	accountID  string
	endpoint   db.WebhookEndpoint
	deliveryID string
	received   <-chan received
}

func setupDelivery(t *testing.T, reply http.HandlerFunc, schedule webhooks.Schedule) *deliverBundle {
	t.Helper()
	ctx := context.Background()
	pool, _ := dbtest.NewPool(t)
	if err := accounts.SeedDemoKeys(ctx, pool, []string{"sk_test_deliver"}); err != nil {
		t.Fatal(err)
	}
	queue, err := jobs.NewClient(pool, jobs.Config{Timeout: time.Minute, RescueAfter: 2 * time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	deliveries := webhooks.NewJobQueue(queue)
	b := &deliverBundle{
		pool:    pool,
		queue:   queue,
		service: webhooks.NewService(pool, webhooks.URLPolicy{AllowPrivateNetworks: true}, deliveries),
		outbox:  events.NewOutbox(deliveries),
	}
	if err := pool.QueryRow(ctx, `SELECT id FROM accounts`).Scan(&b.accountID); err != nil {
		t.Fatal(err)
	}
	srv, got := receiver(t, reply)
	b.received = got
	b.endpoint, err = inTx(ctx, b.pool, func(tx db.Tx) (db.WebhookEndpoint, error) {
		return b.service.CreateEndpoint(ctx, tx, b.accountID, webhooks.EndpointParams{URL: srv.URL + "/hook", EnabledEvents: []string{"*"}})
	})
	if err != nil {
		t.Fatal(err)
	}
	b.deliverer = webhooks.NewDeliverer(pool, localSender(2*time.Second), schedule, nil)
	b.deliveryID = b.recordEvent(t)
	return b
}

// recordEvent commits a payment.succeeded event and returns the delivery queued for it.
func (b *deliverBundle) recordEvent(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	err := db.InTx(ctx, b.pool, func(tx db.Tx) error {
		return b.outbox.Record(ctx, tx, b.accountID, events.PaymentSucceeded, map[string]any{"id": "pay_1", "amount": 100})
	})
	if err != nil {
		t.Fatal(err)
	}
	ds, _, err := b.service.ListDeliveries(ctx, b.accountID, b.endpoint.ID, db.Page{Limit: 1})
	if err != nil || len(ds) != 1 {
		t.Fatalf("deliveries %v, %v", ds, err)
	}
	return ds[0].ID
}

// attemptNow makes the delivery's next attempt due, as if its retry's time had come, and
// makes it.
func (b *deliverBundle) attemptNow(t *testing.T, deliveryID string) (*time.Time, error) {
	t.Helper()
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = now() WHERE id = $1 AND status = 'pending'`, deliveryID)
	if err != nil {
		t.Fatal(err)
	}
	return b.deliverer.Attempt(ctx, b.accountID, deliveryID, nil)
}

func (b *deliverBundle) delivery(t *testing.T) webhooks.Delivery {
	t.Helper()
	ds, _, err := b.service.ListDeliveries(context.Background(), b.accountID, b.endpoint.ID, db.Page{Limit: 100})
	for _, d := range ds {
		if d.ID == b.deliveryID {
			return d
		}
	}
	t.Fatalf("delivery %s not listed (%v)", b.deliveryID, err)
	return webhooks.Delivery{}
}

// replies answers with each status in turn, then with the last one.
func replies(codes ...int) http.HandlerFunc {
	var n atomic.Int32
	return func(w http.ResponseWriter, _ *http.Request) {
		i := min(int(n.Add(1))-1, len(codes)-1)
		w.WriteHeader(codes[i])
	}
}

// TestDeliveredOnTheThirdAttemptWithOneWebhookID: 500, 500, 200 gives three recorded
// attempts, one webhook-id, a fresh timestamp each time and a verifying signature.
func TestDeliveredOnTheThirdAttemptWithOneWebhookID(t *testing.T) {
	b := setupDelivery(t, replies(500, 500, 200), webhooks.Schedule{time.Second, time.Second, time.Second})
	for i := range 3 {
		before := time.Now()
		next, err := b.attemptNow(t, b.deliveryID)
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 && (next == nil || next.Before(before.Add(900*time.Millisecond)) || next.After(time.Now().Add(1100*time.Millisecond))) {
			t.Fatalf("attempt %d: next at %v, want about 1s later", i+1, next)
		}
		if i == 2 && next != nil {
			t.Fatalf("a next attempt after a success: %v", next)
		}
	}
	ids := map[string]bool{}
	for range 3 {
		r := <-b.received
		ids[r.header.Get(webhooks.HeaderID)] = true
		if err := verifier(t, b.endpoint.Secret).Verify(r.header, r.body); err != nil {
			t.Fatalf("signature: %v", err)
		}
		if err := official(t, b.endpoint.Secret).Verify(r.body, r.header); err != nil {
			t.Fatalf("official library: %v", err)
		}
	}
	if len(ids) != 1 || !ids[b.deliveryID] {
		t.Fatalf("webhook-ids %v, want only %s", ids, b.deliveryID)
	}
	d := b.delivery(t)
	if d.Status != webhooks.StatusSucceeded || d.NextAttemptAt != nil || len(d.Attempts) != 3 {
		t.Fatalf("delivery %s with %d attempts, next %v", d.Status, len(d.Attempts), d.NextAttemptAt)
	}
	for i, a := range d.Attempts {
		wantStatus := []int32{500, 500, 200}[i]
		if a.Attempt != int32(i+1) || a.ResponseStatus == nil || *a.ResponseStatus != wantStatus || (wantStatus == 200) != (a.Error == nil) {
			t.Errorf("attempt %d: %+v", i+1, a)
		}
	}
}

// TestAnAttemptCutOffByItsJobIsRecorded: an attempt whose job is stopped while the receiver
// holds the request (the process shutting down) is still recorded, failed, and its retry
// scheduled: the receiver had the request, and the delivery's attempts say so, as the
// metrics and the span do.
func TestAnAttemptCutOffByItsJobIsRecorded(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	b := setupDelivery(t, func(_ http.ResponseWriter, r *http.Request) {
		stop() // the job's context ends while the receiver holds its request
		<-r.Context().Done()
	}, webhooks.Schedule{time.Hour})
	next, err := b.deliverer.Attempt(ctx, b.accountID, b.deliveryID, nil)
	if err != nil || next == nil {
		t.Fatalf("next %v, err %v; want the attempt recorded and the next one scheduled", next, err)
	}
	if d := b.delivery(t); d.Status != webhooks.StatusPending || len(d.Attempts) != 1 || d.Attempts[0].Error == nil {
		t.Errorf("delivery %s with attempts %+v, want one failed attempt recorded", d.Status, d.Attempts)
	}
}

// TestAnAttemptBeforeItsTimeWaits: a job run again before its delivery's retry is due (its
// process died after recording the previous attempt) sends nothing and returns the time.
func TestAnAttemptBeforeItsTimeWaits(t *testing.T) {
	b := setupDelivery(t, replies(500), webhooks.Schedule{time.Hour})
	due, err := b.deliverer.Attempt(context.Background(), b.accountID, b.deliveryID, nil)
	if err != nil || due == nil {
		t.Fatalf("first attempt: next %v, err %v", due, err)
	}
	again, err := b.deliverer.Attempt(context.Background(), b.accountID, b.deliveryID, nil)
	if err != nil || again == nil || again.Sub(*due).Abs() > time.Millisecond {
		t.Fatalf("early run: next %v, err %v; want %v", again, err, due)
	}
	if d := b.delivery(t); len(d.Attempts) != 1 || len(b.received) != 1 {
		t.Fatalf("%d attempts recorded, %d requests received; want 1 each", len(d.Attempts), len(b.received))
	}
}

func TestGoneDisablesTheEndpointAtOnce(t *testing.T) {
	b := setupDelivery(t, replies(http.StatusGone), webhooks.DefaultSchedule)
	other := b.recordEvent(t) // a second pending delivery to the same endpoint
	next, err := b.attemptNow(t, b.deliveryID)
	if err != nil || next != nil {
		t.Fatalf("next %v, err %v; want the delivery over", next, err)
	}
	e, _ := b.service.GetEndpoint(context.Background(), b.accountID, b.endpoint.ID)
	if e.DisabledReason == nil || *e.DisabledReason != "gone" || e.Version == b.endpoint.Version {
		t.Fatalf("endpoint disabled_reason %v version %d after 410", e.DisabledReason, e.Version)
	}
	if d := b.delivery(t); d.Status != webhooks.StatusFailed {
		t.Fatalf("delivery %s after 410", d.Status)
	}
	b.deliveryID = other
	if d := b.delivery(t); d.Status != webhooks.StatusFailed {
		t.Fatalf("the endpoint's other delivery is %s, want failed", d.Status)
	}
	if _, err := b.attemptNow(t, other); err != nil || len(b.received) != 1 {
		t.Fatalf("the disabled endpoint was called again (%d requests, %v)", len(b.received), err)
	}
}

func TestFailingForFiveDaysDisablesTheEndpoint(t *testing.T) {
	b := setupDelivery(t, replies(500), webhooks.DefaultSchedule)
	if _, err := b.attemptNow(t, b.deliveryID); err != nil {
		t.Fatal(err)
	}
	if e, _ := b.service.GetEndpoint(context.Background(), b.accountID, b.endpoint.ID); e.DisabledReason != nil || e.FailingSince == nil {
		t.Fatalf("after one failure: disabled %v, failing since %v", e.DisabledReason, e.FailingSince)
	}
	_, err := b.pool.Exec(context.Background(), `UPDATE webhook_endpoints SET failing_since = now() - interval '5 days 1 minute'`)
	if err != nil {
		t.Fatal(err)
	}
	if next, err := b.attemptNow(t, b.deliveryID); err != nil || next != nil {
		t.Fatalf("next %v, err %v", next, err)
	}
	if e, _ := b.service.GetEndpoint(context.Background(), b.accountID, b.endpoint.ID); e.DisabledReason == nil || *e.DisabledReason != "failing" {
		t.Fatalf("after five days of failures: disabled %v", e.DisabledReason)
	}
}

func TestASuccessEndsTheFailureStreak(t *testing.T) {
	b := setupDelivery(t, replies(500, 200), webhooks.DefaultSchedule)
	for range 2 {
		if _, err := b.attemptNow(t, b.deliveryID); err != nil {
			t.Fatal(err)
		}
	}
	if e, _ := b.service.GetEndpoint(context.Background(), b.accountID, b.endpoint.ID); e.FailingSince != nil {
		t.Fatalf("failing since %v after a success", e.FailingSince)
	}
}

func TestUsedUpScheduleFailsTheDelivery(t *testing.T) {
	b := setupDelivery(t, replies(500), webhooks.Schedule{time.Second})
	for i, wantNext := range []bool{true, false} {
		next, err := b.attemptNow(t, b.deliveryID)
		if err != nil || (next != nil) != wantNext {
			t.Fatalf("attempt %d: next %v, err %v", i+1, next, err)
		}
	}
	if d := b.delivery(t); d.Status != webhooks.StatusFailed || len(d.Attempts) != 2 {
		t.Fatalf("delivery %s with %d attempts", d.Status, len(d.Attempts))
	}
	if _, err := b.redeliver(context.Background(), t); err != nil {
		t.Fatal(err)
	}
	next, err := b.attemptNow(t, b.deliveryID)
	if d := b.delivery(t); err != nil || next == nil || d.Status != webhooks.StatusPending || len(d.Attempts) != 3 {
		t.Fatalf("after a redelivery: %s with %d attempts, next %v, err %v; want a fresh schedule", d.Status, len(d.Attempts), next, err)
	}
}

func TestRefusedAddressFailsWithoutRetries(t *testing.T) {
	b := setupDelivery(t, replies(200), webhooks.DefaultSchedule)
	strict := webhooks.NewDeliverer(b.pool, webhooks.NewSender(webhooks.SenderOptions{Timeout: time.Second}), webhooks.DefaultSchedule, nil)
	if next, err := strict.Attempt(context.Background(), b.accountID, b.deliveryID, nil); err != nil || next != nil {
		t.Fatalf("next %v, err %v; want no retry", next, err)
	}
	d := b.delivery(t)
	if d.Status != webhooks.StatusFailed || len(d.Attempts) != 1 || d.Attempts[0].Error == nil || *d.Attempts[0].Error != "the address is not allowed" {
		t.Fatalf("delivery %s, attempts %+v", d.Status, d.Attempts)
	}
	if len(b.received) != 0 {
		t.Fatal("the receiver on a loopback address was called")
	}
}

// TestUnresolvableHostRecordsAFixedReason: the recorded attempt says the name did not
// resolve, not which resolver was asked (the lookup error names its address), and the
// delivery is retried.
func TestUnresolvableHostRecordsAFixedReason(t *testing.T) {
	b := setupDelivery(t, replies(200), webhooks.DefaultSchedule)
	if _, err := b.pool.Exec(context.Background(), `UPDATE webhook_endpoints SET url = 'http://0x7f.1/hook' WHERE id = $1`, b.endpoint.ID); err != nil {
		t.Fatal(err)
	}
	sender := webhooks.NewSender(webhooks.SenderOptions{Timeout: time.Second, AllowPrivateNetworks: true, Resolver: fakeDNS(nil)})
	deliverer := webhooks.NewDeliverer(b.pool, sender, webhooks.DefaultSchedule, nil)
	next, err := deliverer.Attempt(context.Background(), b.accountID, b.deliveryID, nil)
	if err != nil || next == nil {
		t.Fatalf("next %v, err %v; want a retry", next, err)
	}
	d := b.delivery(t)
	if len(d.Attempts) != 1 || d.Attempts[0].Error == nil || *d.Attempts[0].Error != "the host name did not resolve" {
		t.Fatalf("delivery %s, attempts %+v", d.Status, d.Attempts)
	}
}

func TestDuringRotationAttemptsCarryBothSignatures(t *testing.T) {
	b := setupDelivery(t, replies(200), webhooks.DefaultSchedule)
	rotated, err := inTx(context.Background(), b.pool, func(tx db.Tx) (db.WebhookEndpoint, error) {
		return b.service.RotateSecret(context.Background(), tx, b.accountID, b.endpoint.ID, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.attemptNow(t, b.deliveryID); err != nil {
		t.Fatal(err)
	}
	r := <-b.received
	if n := len(strings.Fields(r.header.Get(webhooks.HeaderSignature))); n != 2 {
		t.Fatalf("%d signatures during a rotation, want 2", n)
	}
	for _, secret := range []string{b.endpoint.Secret, rotated.Secret} {
		if err := official(t, secret).Verify(r.body, r.header); err != nil {
			t.Errorf("official library with one of the secrets: %v", err)
		}
		if err := verifier(t, secret).Verify(r.header, r.body); err != nil {
			t.Errorf("our verifier with one of the secrets: %v", err)
		}
	}
	if got := webhooks.SigningSecrets(rotated, time.Now().Add(webhooks.RotationOverlap+time.Minute)); len(got) != 1 || got[0] != rotated.Secret {
		t.Errorf("after the overlap the attempt is signed with %d secrets, want only the new one", len(got))
	}
}

// TestTwoRunsOfOneAttemptRecordItOnce: two runs of a delivery's job (a rescued job beside
// the one it replaced) both read it and call the receiver; the receiver holds both until
// both have arrived. One records the attempt; the other ends with ErrAttemptRaced, which
// the worker takes as done, and records nothing.
func TestTwoRunsOfOneAttemptRecordItOnce(t *testing.T) {
	var arrived atomic.Int32
	both := make(chan struct{})
	hold := func(w http.ResponseWriter, _ *http.Request) {
		if arrived.Add(1) == 2 {
			close(both)
		}
		select {
		case <-both:
		case <-time.After(5 * time.Second):
		}
		w.WriteHeader(http.StatusInternalServerError)
	}
	b := setupDelivery(t, hold, webhooks.Schedule{time.Second})
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := b.deliverer.Attempt(context.Background(), b.accountID, b.deliveryID, nil)
			errs <- err
		}()
	}
	var raced int
	for range 2 {
		switch err := <-errs; {
		case errors.Is(err, webhooks.ErrAttemptRaced):
			raced++
		case err != nil:
			t.Errorf("attempt: %v", err)
		}
	}
	if raced != 1 {
		t.Errorf("%d runs lost the race, want 1", raced)
	}
	var attempts, count int
	if err := b.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM webhook_attempts WHERE delivery_id = $1),
		(SELECT attempt_count FROM webhook_deliveries WHERE id = $1)`, b.deliveryID).Scan(&attempts, &count); err != nil {
		t.Fatal(err)
	}
	if attempts != 1 || count != 1 {
		t.Errorf("%d attempts recorded and attempt_count %d, want 1 and 1", attempts, count)
	}
}

// TestAnAttemptInFlightCountsAsTheRedeliverysFirst: the last attempt of a delivery's
// schedule is held at the receiver when a redelivery (POST /events/{id}/redeliver) commits;
// then it fails. As the redelivery documents, that attempt counts as the redelivery's first:
// the delivery stays pending with the fresh schedule's next step. Decided as of the old
// schedule, the delivery would fail and the redelivery answered 202 would never be sent.
func TestAnAttemptInFlightCountsAsTheRedeliverysFirst(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	holdTheSecond := func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 2 {
			<-release
		}
		w.WriteHeader(http.StatusInternalServerError)
	}
	b := setupDelivery(t, holdTheSecond, webhooks.Schedule{time.Minute}) // one retry
	if next, err := b.attemptNow(t, b.deliveryID); err != nil || next == nil {
		t.Fatalf("first attempt: next %v, err %v; want its retry", next, err)
	}
	<-b.received
	if _, err := b.pool.Exec(context.Background(), `UPDATE webhook_deliveries SET next_attempt_at = now() WHERE id = $1`, b.deliveryID); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		next *time.Time
		err  error
	}
	attempted := make(chan outcome, 1)
	go func() {
		next, err := b.deliverer.Attempt(context.Background(), b.accountID, b.deliveryID, nil)
		attempted <- outcome{next, err}
	}()
	<-b.received // the schedule's last attempt is at the receiver
	if _, err := b.redeliver(context.Background(), t); err != nil {
		t.Fatal(err)
	}
	close(release)
	got := <-attempted
	if got.err != nil || got.next == nil || time.Until(*got.next) < 30*time.Second {
		t.Fatalf("next %v, err %v; want the redelivery's retry, about a minute away", got.next, got.err)
	}
	d := b.delivery(t)
	if d.Status != webhooks.StatusPending || d.AttemptCount != 2 || d.RoundAttempts != 1 || len(d.Attempts) != 2 {
		t.Fatalf("delivery %s, %d attempts (%d since the redelivery), %d listed; want pending, 2, 1, 2",
			d.Status, d.AttemptCount, d.RoundAttempts, len(d.Attempts))
	}
}

// runningJob is the delivery's River job as River hands it to Work: marked running, with no
// River client running to complete or snooze it afterwards.
func (b *deliverBundle) runningJob(t *testing.T) *river.Job[webhooks.DeliverArgs] {
	t.Helper()
	ctx := context.Background()
	var jobID int64
	err := b.pool.QueryRow(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now()
		WHERE kind = 'webhook.deliver' AND args->>'delivery_id' = $1 RETURNING id`, b.deliveryID).Scan(&jobID)
	if err != nil {
		t.Fatal(err)
	}
	row, err := b.queue.JobGet(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	return &river.Job[webhooks.DeliverArgs]{JobRow: row, Args: webhooks.DeliverArgs{
		AccountID: b.accountID, DeliveryID: b.deliveryID, EndpointID: b.endpoint.ID,
	}}
}

// TestAJobEndsInTheTransactionThatEndsItsDelivery: the job whose attempt ends its delivery
// completes its River entry in the transaction that records it. River would mark the entry
// completed only after Work returns, batched a moment later; a redelivery committing in
// between would find the job running, insert none (one live job per delivery) and leave the
// delivery pending with no job to send it. No River client runs here, so only Work can
// complete the entry, and the redelivery that follows gets a job of its own.
func TestAJobEndsInTheTransactionThatEndsItsDelivery(t *testing.T) {
	b := setupDelivery(t, replies(500), webhooks.Schedule{})
	ctx := context.Background()
	job := b.runningJob(t)
	if err := webhooks.NewWorker(b.deliverer).Work(rivertest.WorkContext(ctx, b.queue), job); err != nil {
		t.Fatal(err)
	}
	if d := b.delivery(t); d.Status != webhooks.StatusFailed {
		t.Fatalf("delivery %s after its only attempt failed, want failed", d.Status)
	}
	jobs := func(state string) (n int) {
		t.Helper()
		if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'webhook.deliver'
			AND args->>'delivery_id' = $1 AND state = $2`, b.deliveryID, state).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := jobs("completed"); n != 1 {
		t.Fatalf("%d completed jobs as Work returns, want 1 (running: %d)", n, jobs("running"))
	}
	if _, err := b.redeliver(ctx, t); err != nil {
		t.Fatal(err)
	}
	if n := jobs("available"); n != 1 {
		t.Fatalf("%d jobs available after the redelivery, want 1", n)
	}
}

// TestARedeliveryAfterAFailedAttemptIsSentNow: the transaction that records a failed
// attempt completes its job and schedules the next attempt's. A redelivery that commits right
// after, before River has done anything with the job that made the attempt, finds the next
// job and makes it due now. Snoozed by River after Work returned, the job would still have
// been running when the redelivery looked, been left be, and slept until the old retry, an
// hour away.
func TestARedeliveryAfterAFailedAttemptIsSentNow(t *testing.T) {
	b := setupDelivery(t, replies(500), webhooks.Schedule{time.Hour})
	ctx := context.Background()
	job := b.runningJob(t)
	if err := webhooks.NewWorker(b.deliverer).Work(rivertest.WorkContext(ctx, b.queue), job); err != nil {
		t.Fatalf("Work: %v, want its job ended in the attempt's transaction", err)
	}
	if d := b.delivery(t); d.Status != webhooks.StatusPending || d.NextAttemptAt == nil || time.Until(*d.NextAttemptAt) < 50*time.Minute {
		t.Fatalf("delivery %s, next attempt %v, want pending for an hour", d.Status, d.NextAttemptAt)
	}
	// Nothing of River's runs here: the redelivery commits as Work returns.
	if _, err := b.redeliver(ctx, t); err != nil {
		t.Fatal(err)
	}
	rows, err := b.pool.Query(ctx, `SELECT state, scheduled_at FROM river_job
		WHERE kind = 'webhook.deliver' AND args->>'delivery_id' = $1 AND id <> $2`, b.deliveryID, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	type next struct {
		State string
		At    time.Time `db:"scheduled_at"`
	}
	others, err := pgx.CollectRows(rows, pgx.RowToStructByPos[next])
	if err != nil {
		t.Fatal(err)
	}
	if len(others) != 1 || others[0].State != "available" || time.Until(others[0].At) > time.Second {
		t.Fatalf("the delivery's jobs besides the one that ran: %+v, want one available now", others)
	}
}

// TestAJobThatFindsItsDeliveryOverSendsARedeliveryFirst: a job run after its delivery ended
// (failed) reads it over, then decides on its row, locked. A redelivery that commits in
// between, while the test holds that lock, makes the delivery pending again: the job goes on
// to send it (it returns the attempt's time) rather than end, which would leave the
// redelivery with no job once River completes this one.
func TestAJobThatFindsItsDeliveryOverSendsARedeliveryFirst(t *testing.T) {
	b := setupDelivery(t, replies(500), webhooks.Schedule{})
	ctx := context.Background()
	if next, err := b.attemptNow(t, b.deliveryID); err != nil || next != nil {
		t.Fatalf("the only attempt: next %v, err %v; want the delivery over", next, err)
	}
	hold, ran := b.attemptBehindRowLock(t)
	// What WebhookDeliveryRequeue does, in the transaction that holds the row.
	if _, err := hold.Exec(ctx, `UPDATE webhook_deliveries SET status = 'pending', round_attempts = 0,
		next_attempt_at = clock_timestamp() WHERE id = $1`, b.deliveryID); err != nil {
		t.Fatal(err)
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := <-ran; got.err != nil || got.next == nil {
		t.Fatalf("next %v, err %v; want the redelivery's attempt, due now", got.next, got.err)
	}
}

// TestAJobThatFindsItsEndpointDisabledSendsARedeliveryFirst: a job that read its endpoint as
// disabled, while the endpoint is enabled again and its delivery requeued, reads the endpoint
// again under the delivery's lock and sends the redelivery, instead of failing it. The test
// holds the delivery's row until the job waits for it.
func TestAJobThatFindsItsEndpointDisabledSendsARedeliveryFirst(t *testing.T) {
	b := setupDelivery(t, replies(200), webhooks.Schedule{})
	ctx := context.Background()
	if _, err := b.pool.Exec(ctx, `UPDATE webhook_endpoints SET disabled_reason = 'requested' WHERE id = $1`, b.endpoint.ID); err != nil {
		t.Fatal(err)
	}
	hold, ran := b.attemptBehindRowLock(t)
	// The endpoint enabled again, and the delivery requeued, in the transaction that holds it.
	if _, err := hold.Exec(ctx, `UPDATE webhook_endpoints SET disabled_reason = NULL WHERE id = $1`, b.endpoint.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `UPDATE webhook_deliveries SET round_attempts = 0, next_attempt_at = clock_timestamp() WHERE id = $1`, b.deliveryID); err != nil {
		t.Fatal(err)
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := <-ran; got.err != nil || got.next == nil {
		t.Fatalf("next %v, err %v; want the redelivery's attempt, due now", got.next, got.err)
	}
	if d := b.delivery(t); d.Status != webhooks.StatusPending {
		t.Errorf("delivery %s, want pending", d.Status)
	}
}

// TestAnAttemptInFlightWhenItsDeliveryEndsDecidesNothing: a delivery failed while its
// attempt is in flight (its endpoint disabled: WebhookDeliveryFailPendingByEndpoint) stays
// failed. The attempt, which the receiver accepted, is counted and decides nothing: the test
// holds the delivery's row until the attempt waits to record, and fails it there.
func TestAnAttemptInFlightWhenItsDeliveryEndsDecidesNothing(t *testing.T) {
	b := setupDelivery(t, replies(200), webhooks.Schedule{time.Hour})
	ctx := context.Background()
	hold, ran := b.attemptBehindRowLock(t)
	if _, err := hold.Exec(ctx, `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL WHERE id = $1`, b.deliveryID); err != nil {
		t.Fatal(err)
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := <-ran; got.err != nil || got.next != nil {
		t.Fatalf("next %v, err %v; want the delivery over", got.next, got.err)
	}
	if d := b.delivery(t); d.Status != webhooks.StatusFailed || d.AttemptCount != 1 {
		t.Errorf("delivery %s after %d attempts, want failed after the 1 in flight", d.Status, d.AttemptCount)
	}
}

// attemptOutcome is what an Attempt returned.
type attemptOutcome struct {
	next *time.Time
	err  error
}

// attemptBehindRowLock locks the bundle's delivery row in a transaction of the test's, starts
// an attempt, and returns once the attempt waits for the row: the transaction, which the
// test commits to let it go (it is rolled back when the test ends otherwise), and the
// attempt's outcome to come.
func (b *deliverBundle) attemptBehindRowLock(t *testing.T) (pgx.Tx, <-chan attemptOutcome) {
	t.Helper()
	ctx := context.Background()
	hold, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hold.Rollback(ctx) })
	if _, err := hold.Exec(ctx, `SELECT 1 FROM webhook_deliveries WHERE id = $1 FOR UPDATE`, b.deliveryID); err != nil {
		t.Fatal(err)
	}
	ran := make(chan attemptOutcome, 1)
	go func() {
		next, err := b.deliverer.Attempt(ctx, b.accountID, b.deliveryID, nil)
		ran <- attemptOutcome{next, err}
	}()
	integration.WaitFor(t, func() bool {
		return integration.Count(t, b.pool, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`) == 1
	})
	return hold, ran
}

// inTx runs op in a transaction of its own, as a request without an Idempotency-Key does.
func inTx[T any](ctx context.Context, pool *pgxpool.Pool, op func(tx db.Tx) (T, error)) (T, error) {
	var v T
	err := db.InTx(ctx, pool, func(tx db.Tx) error {
		var err error
		v, err = op(tx)
		return err
	})
	return v, err
}

// redeliver queues the bundle's event again to every endpoint subscribed to it.
func (b *deliverBundle) redeliver(ctx context.Context, t *testing.T) ([]webhooks.Delivery, error) {
	t.Helper()
	eventID := b.delivery(t).EventID
	return inTx(ctx, b.pool, func(tx db.Tx) ([]webhooks.Delivery, error) {
		return b.service.Redeliver(ctx, tx, b.accountID, eventID, nil)
	})
}

// TestWhatWentWrongIsLogged: a failed attempt is logged at info, with its delivery, endpoint,
// number, status and reason; the one that fails its delivery at warn too, and so is the one
// that disables its endpoint (a 410). A delivered attempt logs nothing. The observer (the
// metrics) is told of each delivery that ended.
func TestWhatWentWrongIsLogged(t *testing.T) {
	b := setupDelivery(t, replies(500, 500, 410, 200), webhooks.Schedule{time.Second})
	var logs bytes.Buffer
	ended := &endings{}
	b.deliverer = webhooks.NewDeliverer(b.pool, localSender(2*time.Second), webhooks.Schedule{time.Second},
		slog.New(slog.NewJSONHandler(&logs, nil))).WithObserver(ended)
	for range 2 { // 500, then 500 past the schedule's one retry
		if _, err := b.attemptNow(t, b.deliveryID); err != nil {
			t.Fatal(err)
		}
	}
	gone := b.recordEvent(t)
	if _, err := b.attemptNow(t, gone); err != nil { // 410
		t.Fatal(err)
	}

	var lines []map[string]any
	for line := range strings.Lines(logs.String()) {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		lines = append(lines, l)
	}
	want := []struct {
		level, msg, delivery string
		attempt, status      float64
	}{
		{"INFO", "webhook attempt failed", b.deliveryID, 1, 500},
		{"INFO", "webhook attempt failed", b.deliveryID, 2, 500},
		{"WARN", "webhook delivery failed", b.deliveryID, 2, 500},
		{"INFO", "webhook attempt failed", gone, 1, 410},
		{"WARN", "webhook endpoint disabled", gone, 1, 410},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), logs.String())
	}
	for i, w := range want {
		l := lines[i]
		if l["level"] != w.level || l["msg"] != w.msg || l["delivery"] != w.delivery || l["attempt"] != w.attempt ||
			l["status"] != w.status || l["endpoint"] != b.endpoint.ID || l["error"] == "" {
			t.Errorf("line %d: %v, want %+v", i+1, l, w)
		}
	}
	if !slices.Equal(ended.outcomes, []string{"failed", "endpoint_disabled"}) {
		t.Errorf("deliveries ended %v, want [failed endpoint_disabled]", ended.outcomes)
	}
}

// endings is an Observer that keeps the outcomes of the deliveries that ended.
type endings struct{ outcomes []string }

func (*endings) WebhookDelivered(string, time.Duration) {}
func (e *endings) WebhookDeliveryEnded(outcome string)  { e.outcomes = append(e.outcomes, outcome) }
