package db_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

func TestIsUnavailable(t *testing.T) {
	t.Parallel()
	pgErr := func(code string) error { return fmt.Errorf("query: %w", &pgconn.PgError{Code: code}) }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"request deadline", fmt.Errorf("begin: %w", context.DeadlineExceeded), true},
		{"connection refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{"server hung up", fmt.Errorf("receive: %w", io.ErrUnexpectedEOF), true},
		{"conn closed", fmt.Errorf("commit: %w", pgconn.ErrConnClosed), true},
		{"admin shutdown", pgErr("57P01"), true},
		{"crash shutdown", pgErr("57P02"), true},
		{"starting up", pgErr("57P03"), true},
		{"too many connections", pgErr("53300"), true},
		{"statement timeout", pgErr("57014"), true},
		{"connection failure", pgErr("08006"), true},
		{"demoted to a standby", pgErr("25006"), true},
		{"nil", nil, false},
		{"client gone", context.Canceled, false},
		{"unique violation", pgErr("23505"), false},
		{"bad credentials", pgErr("28P01"), false},
		{"no such database", pgErr("3D000"), false},
		{"a bug", errors.New("nil map"), false},
	}
	for _, tt := range tests {
		if got := db.IsUnavailable(tt.err); got != tt.want {
			t.Errorf("%s: IsUnavailable(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// TestUnavailableErrorsFromARealPool: the errors pgx really returns for a server that is not
// there and for a statement cut off by statement_timeout are recognised.
func TestUnavailableErrorsFromARealPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := db.Open(ctx, "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable", db.Options{})
	if !db.IsUnavailable(err) {
		t.Errorf("nothing listening: %v is not recognised", err)
	}

	pool, err := db.Open(ctx, dbtest.NewURL(t), db.Options{StatementTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var setting string
	if err := pool.QueryRow(ctx, "SHOW statement_timeout").Scan(&setting); err != nil || setting != "100ms" {
		t.Errorf("statement_timeout %q (%v), want 100ms", setting, err)
	}
	start := time.Now()
	_, err = pool.Exec(ctx, "SELECT pg_sleep(5)")
	if !db.IsUnavailable(err) || time.Since(start) > 2*time.Second {
		t.Errorf("a statement past statement_timeout: %v after %s", err, time.Since(start))
	}
}

// TestATransactionLeftIdleEnds: a transaction whose client goes silent for longer than the
// pool's statement_timeout is ended by the server, and the locks it held are free.
func TestATransactionLeftIdleEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	pool, err := db.Open(ctx, url, db.Options{StatementTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(4343)`); err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(ctx, url) // advisory locks are the database's
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	var free bool
	for deadline := time.Now().Add(5 * time.Second); !free && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := other.QueryRow(ctx, `SELECT pg_try_advisory_lock(4343)`).Scan(&free); err != nil {
			t.Fatal(err)
		}
	}
	if !free {
		t.Fatal("the lock of a transaction idle for 5 s is still held")
	}
}

// TestURLSettingsWin: statement_timeout and pool_ping_timeout in DATABASE_URL override the
// pool's defaults.
func TestURLSettingsWin(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	pool, err := db.Open(context.Background(), url+"&statement_timeout=7000&pool_ping_timeout=7s", db.Options{StatementTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var setting string
	if err := pool.QueryRow(context.Background(), "SHOW statement_timeout").Scan(&setting); err != nil || setting != "7s" {
		t.Errorf("statement_timeout %q (%v), want the URL's 7s", setting, err)
	}
	if got := pool.Config().PingTimeout; got != 7*time.Second {
		t.Errorf("pool_ping_timeout %v, want the URL's 7s", got)
	}
	defaults, err := db.Open(context.Background(), url, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer defaults.Close()
	if got := defaults.Config().PingTimeout; got != time.Second {
		t.Errorf("pool_ping_timeout %v without the URL's, want the default 1s", got)
	}
}

// TestEveryForeignKeyToAnAccountIsKnownByName: IsAccountDeleted knows a write of a deleted
// account's row by its foreign key's name, so every foreign key to accounts must have the
// name it looks for; and a row of an account that is not there is known as one.
func TestEveryForeignKeyToAnAccountIsKnownByName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := db.Open(ctx, dbtest.NewURL(t), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rows, err := pool.Query(ctx, `SELECT conname FROM pg_constraint WHERE contype = 'f' AND confrelid = 'accounts'::regclass`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(names) == 0 {
		t.Fatalf("foreign keys to accounts: %v, %v", names, err)
	}
	for _, name := range names {
		if !strings.HasSuffix(name, "_account_id_fkey") {
			t.Errorf("the foreign key %s to accounts: IsAccountDeleted would not know it", name)
		}
	}
	_, err = pool.Exec(ctx, `INSERT INTO api_keys (id, account_id, key_hash, prefix) VALUES ('key_x', 'acct_gone', '\x00', 'sk_test_')`)
	if !db.IsAccountDeleted(err) {
		t.Errorf("a row of no account: %v, want IsAccountDeleted", err)
	}
}
