package db_test

import (
	"context"
	"testing"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// BenchmarkPaymentGetByID reads one payment in pgx's default mode (statements prepared once
// per connection) and in the modes DATABASE_URL may use behind PgBouncer, where every query
// is parsed again: the price of a transaction pooler.
func BenchmarkPaymentGetByID(b *testing.B) {
	for _, mode := range []string{"cache_statement", "cache_describe", "exec", "simple_protocol"} {
		b.Run(mode, func(b *testing.B) {
			pool, err := db.Open(context.Background(), dbtest.NewURL(b)+"&default_query_exec_mode="+mode, db.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			q := db.New(pool)
			ctx := context.Background()
			if err := q.AccountCreateIfMissing(ctx, "acct_bench"); err != nil {
				b.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `INSERT INTO payments (id, account_id, amount, currency, status, payment_method)
				VALUES ('pay_bench', 'acct_bench', 100, 'usd', 'succeeded', 'pm_card_visa')`); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := q.PaymentGetByID(ctx, db.PaymentGetByIDParams{ID: "pay_bench", AccountID: "acct_bench"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
