package events_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/jobs"
	"github.com/payments-api/payments-api/internal/payments"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/internal/webhooks"
)

// TestEventAndDeliveriesCommitWithTheChange: a payment whose transaction rolls back leaves no
// event, no delivery and no queued delivery job; the same payment committed leaves one of
// each.
func TestEventAndDeliveriesCommitWithTheChange(t *testing.T) {
	ctx := context.Background()
	pool, _ := dbtest.NewPool(t)
	if err := accounts.SeedDemoKeys(ctx, pool, []string{"sk_test_outbox"}); err != nil {
		t.Fatal(err)
	}
	var accountID string
	if err := pool.QueryRow(ctx, `SELECT id FROM accounts`).Scan(&accountID); err != nil {
		t.Fatal(err)
	}
	_, err := db.New(pool).WebhookEndpointInsert(ctx, db.WebhookEndpointInsertParams{
		ID: "we_outbox", AccountID: accountID, Url: "https://93.184.215.14/hook",
		EnabledEvents: []string{"*"}, Secret: "whsec_c2VjcmV0",
	})
	if err != nil {
		t.Fatal(err)
	}
	queue, err := jobs.NewClient(pool, jobs.Config{Timeout: time.Minute, RescueAfter: 2 * time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	svc := payments.NewService(pool, processor.Simulated{}, events.NewOutbox(webhooks.NewJobQueue(queue)))
	charge := func(tx db.Tx) error {
		_, _, err := svc.Create(ctx, tx, accountID, payments.CreateParams{Amount: 100, Currency: "usd", PaymentMethod: processor.CardVisa})
		return err
	}
	count := func(table string) int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	boom := errors.New("a later step of the transaction failed")
	if err := db.InTx(ctx, pool, func(tx db.Tx) error { return errors.Join(charge(tx), boom) }); !errors.Is(err, boom) {
		t.Fatalf("rolled-back transaction: %v", err)
	}
	if p, e, d, j := count("payments"), count("events"), count("webhook_deliveries"), count("river_job"); p+e+d+j != 0 {
		t.Fatalf("after a rollback: %d payments, %d events, %d deliveries, %d jobs; want none", p, e, d, j)
	}

	if err := db.InTx(ctx, pool, charge); err != nil {
		t.Fatal(err)
	}
	if p, e, d, j := count("payments"), count("events"), count("webhook_deliveries"), count("river_job"); p != 1 || e != 1 || d != 1 || j != 1 {
		t.Fatalf("after a commit: %d payments, %d events, %d deliveries, %d jobs; want one each", p, e, d, j)
	}
	var jobDelivery, deliveryID string
	if err := pool.QueryRow(ctx, `SELECT args->>'delivery_id' FROM river_job`).Scan(&jobDelivery); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT id FROM webhook_deliveries`).Scan(&deliveryID); err != nil {
		t.Fatal(err)
	}
	if jobDelivery != deliveryID {
		t.Fatalf("the queued job sends %q, the delivery is %q", jobDelivery, deliveryID)
	}
}
