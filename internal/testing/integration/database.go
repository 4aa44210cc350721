package integration

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Pool connects to the database at url, for a test to look at what the server wrote or to
// hold a lock the server meets. It is closed when t ends.
func Pool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Count is the integer query answers.
func Count(t testing.TB, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// SeedPayments inserts n payments, pay_seed1 to pay_seedN, of the account of apiKey,
// created a minute ago: what a report then reads page by page.
func SeedPayments(t testing.TB, pool *pgxpool.Pool, apiKey string, n int) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
		INSERT INTO payments (id, account_id, amount, currency, status, payment_method, created_at, updated_at)
		SELECT 'pay_seed' || g, k.account_id, g, 'usd', 'succeeded', 'pm_card_visa',
		       now() - interval '1 minute', now() - interval '1 minute'
		FROM generate_series(1, $2) g, api_keys k
		WHERE k.key_hash = sha256($1::text::bytea)`, apiKey, n)
	if err != nil {
		t.Fatal(err)
	}
}
