package db_test

import (
	"context"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/migrations"
)

// TestMigrationsUpDownUp proves every down migration undoes its up migration: all the way
// down leaves no table behind, and the schema comes back up cleanly.
func TestMigrationsUpDownUp(t *testing.T) {
	url := dbtest.NewEmptyURL(t)
	m, err := db.NewMigrator(url)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	latest, steps := upMigrations(t)

	mustVersion := func(step string, want uint) {
		t.Helper()
		got, dirty, err := m.Version()
		if err != nil || dirty || got != want {
			t.Fatalf("%s: version %d dirty %v err %v, want %d", step, got, dirty, err, want)
		}
	}
	if err := m.Up(); err != nil {
		t.Fatal(err)
	}
	mustVersion("up", latest)
	if err := m.Up(); err != nil {
		t.Fatalf("up when current must be a no-op: %v", err)
	}
	if err := m.Down(steps); err != nil {
		t.Fatal(err)
	}
	mustVersion("down", 0)
	if n := userTables(t, url); n != 1 { // only golang-migrate's schema_migrations remains
		t.Errorf("%d tables left after migrating down, want only schema_migrations", n)
	}
	if err := m.Up(); err != nil {
		t.Fatal(err)
	}
	mustVersion("up again", latest)
}

// TestMigratorIgnoresPoolSettings: DATABASE_URL may carry pgxpool's settings, which are not
// PostgreSQL parameters; the migrator's own connection must not send them.
func TestMigratorIgnoresPoolSettings(t *testing.T) {
	t.Parallel()
	m, err := db.NewMigrator(dbtest.NewEmptyURL(t) + "&pool_max_conns=4&pool_min_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Up(); err != nil {
		t.Fatalf("migrate with pool settings in the URL: %v", err)
	}
}

// upMigrations returns the highest migration version and how many there are. Versions need
// not be contiguous: parallel branches reserve ranges of numbers.
func upMigrations(t *testing.T) (latest uint, count int) {
	t.Helper()
	files, err := fs.Glob(migrations.FS, "*.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		v, err := strconv.ParseUint(strings.SplitN(f, "_", 2)[0], 10, 64)
		if err != nil {
			t.Fatalf("migration %s: %v", f, err)
		}
		latest = max(latest, uint(v))
	}
	return latest, len(files)
}

func userTables(t *testing.T, url string) int {
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
