// Package dbtest gives each test a fresh, fully migrated PostgreSQL database in milliseconds:
// pgtestdb migrates a template database once per migration set (the hash of migrations/) and
// clones it with CREATE DATABASE ... TEMPLATE for every test, dropping it when the test passes.
//
// The server is TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres).
package dbtest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver pgtestdb connects with
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/migrations"
	"github.com/peterldowns/pgtestdb"
)

// NewURL creates a fresh migrated database for t and returns its URL.
func NewURL(t testing.TB) string {
	t.Helper()
	return pgtestdb.Custom(t, serverConfig(t), migrator{}).URL()
}

// NewEmptyURL creates a fresh database with no schema at all (for migration tests).
func NewEmptyURL(t testing.TB) string {
	t.Helper()
	return pgtestdb.Custom(t, serverConfig(t), pgtestdb.NoopMigrator{}).URL()
}

// NewPool creates a fresh migrated database for t and a pool connected to it, closed when t
// ends. The pool is the server's (db.Open): as many connections, so a test can have as many
// requests inside their transactions at once as the server would.
func NewPool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	u := NewURL(t)
	pool, err := db.Open(context.Background(), u, db.Options{})
	if err != nil {
		t.Fatalf("connect to test database: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool, u
}

func serverConfig(t testing.TB) pgtestdb.Config {
	raw := os.Getenv("TEST_DATABASE_URL")
	if raw == "" {
		raw = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("TEST_DATABASE_URL: %v", err)
	}
	password, _ := u.User.Password()
	return pgtestdb.Config{
		DriverName: "pgx",
		Host:       u.Hostname(),
		Port:       u.Port(),
		User:       u.User.Username(),
		Password:   password,
		Database:   u.Path[1:],
		Options:    u.RawQuery,
		// A test that leaks a connection should not leave its database behind.
		ForceTerminateConnections: true,
	}
}

// migrator applies migrations/ with golang-migrate, exactly as the server does at start-up.
type migrator struct{}

// Hash names the template: any change to a migration file makes a new one.
func (migrator) Hash() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		content, err := fs.ReadFile(migrations.FS, path)
		h.Write([]byte(path))
		h.Write(content)
		return err
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

func (migrator) Migrate(_ context.Context, _ *sql.DB, conf pgtestdb.Config) error {
	m, err := db.NewMigrator(conf.URL())
	if err != nil {
		return err
	}
	return errors.Join(m.Up(), m.Close())
}
