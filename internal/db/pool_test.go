package db_test

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// TestOpenCreatesAMissingDatabase: on a fresh machine the server's database does not exist
// yet; Open creates it rather than failing.
func TestOpenCreatesAMissingDatabase(t *testing.T) {
	admin := os.Getenv("TEST_DATABASE_URL")
	if admin == "" {
		admin = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	name := "payments_open_" + strings.ToLower(rand.Text()[:10])
	u.Path = "/" + name
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(context.Background())
		_, err = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		if err != nil {
			t.Error(err)
		}
	})

	pool, err := db.Open(context.Background(), u.String(), db.Options{})
	if err != nil {
		t.Fatalf("Open on a missing database: %v", err)
	}
	defer pool.Close()
	var got string
	if err := pool.QueryRow(context.Background(), "SELECT current_database()").Scan(&got); err != nil || got != name {
		t.Errorf("connected to %q (%v), want %q", got, err, name)
	}
}

// TestPoolPlansEachStatementOnce: the server's connections use one generic plan per prepared
// statement from its first run (the plan the lookup plan tests check), where
// PostgreSQL would plan each of the first five runs for their values and then keep planning
// a list page anew once its account grew. A plan_cache_mode in the URL wins.
func TestPoolPlansEachStatementOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, url       string
		generic, custom int64
	}{
		{"by default", "", 7, 0},
		{"plan_cache_mode=auto in the URL", "&plan_cache_mode=auto", 2, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool, err := db.Open(ctx, dbtest.NewURL(t)+tc.url, db.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			conn, err := pool.Acquire(ctx) // pg_prepared_statements is the connection's own
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Release()
			for limit := range int32(7) {
				if _, err := db.New(conn).PaymentList(ctx, db.PaymentListParams{AccountID: "acct_none", RowLimit: limit + 1}); err != nil {
					t.Fatal(err)
				}
			}
			var generic, custom int64
			err = conn.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements
				WHERE starts_with(statement, '-- name: PaymentList :many')`).Scan(&generic, &custom)
			if err != nil {
				t.Fatal(err)
			}
			if generic != tc.generic || custom != tc.custom {
				t.Errorf("7 runs of PaymentList: %d with the generic plan and %d planned for their values, want %d and %d",
					generic, custom, tc.generic, tc.custom)
			}
		})
	}
}
