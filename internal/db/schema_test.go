package db_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// TestSchemaRefusesImpossiblePayments: the schema's CHECKs refuse a payment the code should
// never write, whatever the code does: refunded beyond its amount or below nothing, an amount
// of nothing, a currency that is no ISO 4217 code, a status without a meaning.
func TestSchemaRefusesImpossiblePayments(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.NewPool(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO accounts (id) VALUES ('acct_schema');
		INSERT INTO payments (id, account_id, amount, currency, status, payment_method)
		VALUES ('pay_schema', 'acct_schema', 100, 'usd', 'succeeded', 'pm_card_visa')`)
	if err != nil {
		t.Fatal(err)
	}
	for _, change := range []string{
		`amount_refunded = 101`,
		`amount_refunded = -1`,
		`amount = 0`,
		`currency = 'USD'`,
		`status = 'pending'`,
	} {
		_, err := pool.Exec(ctx, `UPDATE payments SET `+change+` WHERE id = 'pay_schema'`)
		if pgErr := (*pgconn.PgError)(nil); !errors.As(err, &pgErr) || pgErr.Code != pgerrcode.CheckViolation {
			t.Errorf("SET %s: %v, want a check violation", change, err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE payments SET amount_refunded = 100, status = 'refunded' WHERE id = 'pay_schema'`); err != nil {
		t.Errorf("refunding the whole amount: %v", err)
	}
}
