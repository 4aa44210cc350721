package db_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

func countAccounts(t *testing.T, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id string) int {
	t.Helper()
	var n int
	if err := q.QueryRow(context.Background(), `SELECT count(*) FROM accounts WHERE id = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLaterWritesWaitForTheCommit: a statement queued on Tx.Later is not sent when called,
// and is committed with the transaction.
func TestLaterWritesWaitForTheCommit(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.NewPool(t)
	ctx := context.Background()
	err := db.InTx(ctx, pool, func(tx db.Tx) error {
		if err := tx.Later.AccountCreateIfMissing(ctx, "acct_later"); err != nil {
			return err
		}
		pgxTx, err := tx.PgxTx(ctx)
		if err != nil {
			return err
		}
		if n := countAccounts(t, pgxTx, "acct_later"); n != 0 {
			t.Errorf("the queued insert ran before the commit: %d rows in the transaction", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := countAccounts(t, pool, "acct_later"); n != 1 {
		t.Errorf("%d rows after the commit, want 1", n)
	}
}

// TestLaterFailureRollsBackTheTransaction: a queued statement that fails fails InTx, and
// the statements sent earlier roll back with it.
func TestLaterFailureRollsBackTheTransaction(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.NewPool(t)
	ctx := context.Background()
	err := db.InTx(ctx, pool, func(tx db.Tx) error {
		if err := tx.AccountCreateIfMissing(ctx, "acct_sent_now"); err != nil {
			return err
		}
		// No such account: the foreign key refuses it, but only when the queue is sent.
		return tx.Later.PaymentInsert(ctx, orphanPayment)
	})
	if err == nil {
		t.Fatal("InTx succeeded although a queued statement violated a foreign key")
	}
	if n := countAccounts(t, pool, "acct_sent_now"); n != 0 {
		t.Errorf("the statement sent before the failed queue committed (%d rows)", n)
	}
}

// TestLaterRefusesQueriesWithResults: a result would only exist after the commit, too late
// to read, so Later refuses :one and :many queries instead of answering nothing.
func TestLaterRefusesQueriesWithResults(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.NewPool(t)
	ctx := context.Background()
	err := db.InTx(ctx, pool, func(tx db.Tx) error {
		_, err := tx.Later.AccountGetByAPIKeyHash(ctx, []byte{1})
		return err
	})
	if err == nil || errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("a query with results through Later: %v, want a refusal", err)
	}
}
