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
