package db_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// TestATransactionCostsItsStatementsRoundTrips: BEGIN goes with the first statement and
// COMMIT with the deferred writes, so a read and a write commit in two round trips.
func TestATransactionCostsItsStatementsRoundTrips(t *testing.T) {
	t.Parallel()
	pool, trips := dbtest.NewCountedPool(t)
	ctx := context.Background()
	readThenWrite := func(id string) error {
		return db.InTx(ctx, pool, func(tx db.Tx) error {
			if _, err := tx.AccountGetByAPIKeyHash(ctx, []byte(id)); err == nil {
				t.Errorf("account of key %q found, want none", id)
			}
			return tx.Later.AccountCreateIfMissing(ctx, id)
		})
	}
	if err := readThenWrite("acct_warm"); err != nil {
		t.Fatal(err)
	}
	trips.Reset()
	if err := readThenWrite("acct_counted"); err != nil {
		t.Fatal(err)
	}
	if n := trips.Count(); n != 2 {
		t.Errorf("a read and a deferred write took %d round trips, want 2", n)
	}
	if n := countAccounts(t, pool, "acct_counted"); n != 1 {
		t.Errorf("%d rows after the commit, want 1", n)
	}
}

// TestDeferredWritesAloneCommitAllOrNothing: a transaction of deferred writes only is one
// batch, without BEGIN, which PostgreSQL runs as one implicit transaction: when its second
// write fails, its first does not commit either.
func TestDeferredWritesAloneCommitAllOrNothing(t *testing.T) {
	t.Parallel()
	pool, trips := dbtest.NewCountedPool(t)
	ctx := context.Background()
	err := db.InTx(ctx, pool, func(tx db.Tx) error {
		if err := tx.Later.AccountCreateIfMissing(ctx, "acct_first"); err != nil {
			return err
		}
		return tx.Later.PaymentInsert(ctx, orphanPayment)
	})
	if err == nil {
		t.Fatal("InTx succeeded although a queued statement violated a foreign key")
	}
	if n := countAccounts(t, pool, "acct_first"); n != 0 {
		t.Errorf("the write before the failed one committed (%d rows)", n)
	}
	trips.Reset()
	if err := db.InTx(ctx, pool, func(tx db.Tx) error { return tx.Later.AccountCreateIfMissing(ctx, "acct_alone") }); err != nil {
		t.Fatal(err)
	}
	if n := trips.Count(); n != 1 {
		t.Errorf("a deferred write alone took %d round trips, want 1", n)
	}
}

// TestAFailedFirstStatementRollsBack: the statement that began the transaction fails, the
// transaction rolls back and its connection is free for the next one.
func TestAFailedFirstStatementRollsBack(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.NewCountedPool(t)
	ctx := context.Background()
	err := db.InTx(ctx, pool, func(tx db.Tx) error {
		return tx.PaymentInsert(ctx, orphanPayment)
	})
	if err == nil {
		t.Fatal("InTx succeeded although its first statement violated a foreign key")
	}
	if err := db.InTx(ctx, pool, func(tx db.Tx) error { return tx.AccountCreateIfMissing(ctx, "acct_next") }); err != nil {
		t.Fatalf("the next transaction on the same connection: %v", err)
	}
	if n := countAccounts(t, pool, "acct_next"); n != 1 {
		t.Errorf("%d rows after the next transaction, want 1", n)
	}
}

// TestReadsAheadGoWithTheFirstStatement: the webhook endpoints read ahead come back with
// the transaction's first statement, and asking for them costs no round trip. What the one
// read answers for each type is what WebhookEndpointListSubscribed answers on its own: an
// endpoint taking the type or '*', none disabled or of another account or type, by id.
func TestReadsAheadGoWithTheFirstStatement(t *testing.T) {
	t.Parallel()
	pool, trips := dbtest.NewCountedPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO accounts (id) VALUES ('acct_ahead'), ('acct_other');
		INSERT INTO webhook_endpoints (id, account_id, url, enabled_events, secret)
		VALUES ('we_all', 'acct_ahead', 'https://example.com/all', '{*}', 'whsec_x'),
		       ('we_failed', 'acct_ahead', 'https://example.com/failed', '{payment.failed}', 'whsec_x'),
		       ('we_both', 'acct_ahead', 'https://example.com/both', '{refund.created,payment.succeeded,payment.failed}', 'whsec_x'),
		       ('we_refunds', 'acct_ahead', 'https://example.com/refunds', '{refund.created}', 'whsec_x'),
		       ('we_other', 'acct_other', 'https://example.com/other', '{*}', 'whsec_x');
		INSERT INTO webhook_endpoints (id, account_id, url, enabled_events, secret, disabled_reason)
		VALUES ('we_disabled', 'acct_ahead', 'https://example.com/disabled', '{*}', 'whsec_x', 'gone')`); err != nil {
		t.Fatal(err)
	}
	types := []string{"payment.succeeded", "payment.failed"}
	lookup := func(ahead bool) map[string][]string {
		var reads []db.Ahead
		if ahead {
			reads = append(reads, db.SubscribedEndpointsAhead("acct_ahead", types...))
		}
		found := map[string][]string{}
		err := db.InTx(ctx, pool, func(tx db.Tx) error {
			if _, err := tx.AccountGetByAPIKeyHash(ctx, []byte("no key")); err == nil {
				t.Error("an account for no key")
			}
			for _, eventType := range types {
				ids, err := tx.SubscribedEndpoints(ctx, db.WebhookEndpointListSubscribedParams{AccountID: "acct_ahead", Type: eventType})
				if err != nil {
					return err
				}
				found[eventType] = ids
			}
			return nil
		}, reads...)
		if err != nil {
			t.Fatal(err)
		}
		return found
	}
	alone := lookup(false)
	want := map[string][]string{"payment.succeeded": {"we_all", "we_both"}, "payment.failed": {"we_all", "we_both", "we_failed"}}
	if !maps.EqualFunc(alone, want, slices.Equal) {
		t.Fatalf("WebhookEndpointListSubscribed on its own: %v, want %v", alone, want)
	}
	lookup(true)
	trips.Reset()
	if ahead := lookup(true); !maps.EqualFunc(ahead, alone, slices.Equal) {
		t.Errorf("endpoints read ahead: %v; on their own: %v", ahead, alone)
	}
	if n := trips.Count(); n != 2 {
		t.Errorf("a statement, the read ahead and COMMIT took %d round trips, want 2", n)
	}
}

// TestACommitThatRollsBackIsAnError: a statement failed inside fn and fn went on regardless,
// so PostgreSQL answers the COMMIT with ROLLBACK, alone or after deferred writes (which it
// refuses). InTx reports it, never a commit that did not happen.
func TestACommitThatRollsBackIsAnError(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.NewCountedPool(t)
	ctx := context.Background()
	for _, deferred := range []bool{false, true} {
		err := db.InTx(ctx, pool, func(tx db.Tx) error {
			if err := tx.AccountCreateIfMissing(ctx, "acct_lost"); err != nil {
				return err
			}
			_ = tx.PaymentInsert(ctx, orphanPayment) // fails: no such account
			if deferred {
				return tx.Later.AccountCreateIfMissing(ctx, "acct_deferred")
			}
			return nil
		})
		if err == nil {
			t.Errorf("deferred writes %t: InTx succeeded, but the transaction had failed", deferred)
		}
		if !deferred && !errors.Is(err, pgx.ErrTxCommitRollback) {
			t.Errorf("COMMIT alone: %v, want pgx.ErrTxCommitRollback", err)
		}
		if n := countAccounts(t, pool, "acct_lost"); n != 0 {
			t.Errorf("deferred writes %t: the statement before the failed one committed (%d rows)", deferred, n)
		}
	}
}

// orphanPayment is a payment of an account that does not exist: its insert fails on the
// foreign key, when it reaches the server.
var orphanPayment = db.PaymentInsertParams{
	ID: "pay_orphan", AccountID: "acct_missing", Amount: 1, Currency: "usd", Status: "succeeded",
	PaymentMethod: "pm_card_visa", Metadata: []byte(`{}`), CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
}
