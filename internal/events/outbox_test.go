package events_test

import (
	"context"
	"errors"
	"testing"

	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/dbtest"
	"github.com/payments-api/payments-api/internal/payments"
	"github.com/payments-api/payments-api/internal/processor"
)

// TestEventAndDeliveriesCommitWithTheChange: a payment whose transaction rolls back leaves no
// event and no delivery; the same payment committed leaves one of each.
func TestEventAndDeliveriesCommitWithTheChange(t *testing.T) {
	ctx := context.Background()
	pool, _ := dbtest.NewPool(t)
	if err := accounts.SeedDemoKeys(ctx, db.New(pool), []string{"sk_test_outbox"}); err != nil {
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
	svc := payments.NewService(pool, processor.Simulated{})
	charge := func(tx db.Tx) error {
		_, err := svc.Create(ctx, tx, accountID, payments.CreateParams{Amount: 100, Currency: "usd", PaymentMethod: processor.CardVisa})
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
	if p, e, d := count("payments"), count("events"), count("webhook_deliveries"); p+e+d != 0 {
		t.Fatalf("after a rollback: %d payments, %d events, %d deliveries; want none", p, e, d)
	}

	if err := db.InTx(ctx, pool, charge); err != nil {
		t.Fatal(err)
	}
	if p, e, d := count("payments"), count("events"), count("webhook_deliveries"); p != 1 || e != 1 || d != 1 {
		t.Fatalf("after a commit: %d payments, %d events, %d deliveries; want one each", p, e, d)
	}
}
