package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/migrations"
)

func TestCommandLine(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args       []string
		wantOutput string // printed, for help
		wantErr    string
	}{
		{[]string{"--help"}, "migrate COMMAND", ""},
		{[]string{"-h"}, "migrate COMMAND", ""},
		{[]string{"help"}, "migrate COMMAND", ""},
		{[]string{"migrate", "--help"}, "force V", ""},
		{[]string{"migrate", "help"}, "force V", ""},
		{[]string{"serve"}, "", `unknown command "serve"`},
		{[]string{"migrate"}, "", "usage: payments-api migrate"},
		{[]string{"migrate", "sideways"}, "", "usage: payments-api migrate"},
		{[]string{"migrate", "up", "now"}, "", "usage: payments-api migrate"},
		{[]string{"migrate", "down", "1", "2"}, "", "usage: payments-api migrate"},
		{[]string{"migrate", "down", "0"}, "", "at least 1"},
		{[]string{"migrate", "force", "-1"}, "", "whole number"},
	} {
		// None of these may connect: run fails before reading DATABASE_URL, or prints help.
		var out bytes.Buffer
		err := run(tt.args, &out)
		if tt.wantErr == "" && (err != nil || !strings.Contains(out.String(), tt.wantOutput)) {
			t.Errorf("%q: %v, printed %q", tt.args, err, out.String())
		}
		if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%q: error %v, want one with %q", tt.args, err, tt.wantErr)
		}
	}
}

// TestOnlyMigrateUpCreatesTheDatabase: version, down and force on a missing database fail
// and leave it missing; up creates and migrates it.
func TestOnlyMigrateUpCreatesTheDatabase(t *testing.T) {
	t.Parallel()
	cfg := missingDatabase(t)
	for _, args := range [][]string{{"version"}, {"down"}, {"down", "1"}, {"force", "1"}} {
		mig, err := parseMigrate(args)
		if err != nil {
			t.Fatal(err)
		}
		if err := migrateCommand(context.Background(), cfg, mig, &bytes.Buffer{}); err == nil {
			t.Errorf("migrate %v on a missing database succeeded", args)
		}
		if databaseExists(t, cfg.DatabaseURL) {
			t.Fatalf("migrate %v created the database", args)
		}
	}
	var out bytes.Buffer
	if err := migrateCommand(context.Background(), cfg, migration{action: "up"}, &out); err != nil {
		t.Fatal(err)
	}
	if versions := migrationVersions(); !databaseExists(t, cfg.DatabaseURL) || out.String() != "version "+versions[len(versions)-1]+"\n" {
		t.Errorf("migrate up printed %q", out.String())
	}
}

// TestMigrateForce: a database left dirty by a failed migration says how to recover, and
// force records the version the operator names, clean.
func TestMigrateForce(t *testing.T) {
	t.Parallel()
	cfg := config{DatabaseURL: dbtest.NewURL(t)}
	exec(t, cfg.DatabaseURL, `UPDATE schema_migrations SET dirty = true`)
	versions := migrationVersions()
	latest, previous := versions[len(versions)-1], versions[len(versions)-2]

	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"version"}, "version " + latest + " (dirty: migration " + latest + " failed half-way; repair the schema by hand, " +
			"then record the version it is at with payments-api migrate force: " + latest + " if you completed the migration, " +
			previous + " if you undid it)\n"},
		{[]string{"force", latest}, "version " + latest + "\n"},
		{[]string{"force", "1"}, "version 1\n"},
		{[]string{"force", "0"}, "version 0\n"}, // none applied
	} {
		mig, err := parseMigrate(step.args)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := migrateCommand(context.Background(), cfg, mig, &out); err != nil {
			t.Fatalf("migrate %v: %v", step.args, err)
		}
		if !strings.HasPrefix(out.String(), step.want) {
			t.Errorf("migrate %v printed %q, want %q", step.args, out.String(), step.want)
		}
	}
	mig, err := parseMigrate([]string{"force", "999"})
	if err != nil {
		t.Fatal(err)
	}
	if err := migrateCommand(context.Background(), cfg, mig, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "no such migration") {
		t.Errorf("force to an unknown version: %v", err)
	}
}

// missingDatabase is a configuration naming a database that does not exist yet on the test
// server, dropped when t ends if something created it.
func missingDatabase(t *testing.T) config {
	t.Helper()
	admin := os.Getenv("TEST_DATABASE_URL")
	if admin == "" {
		admin = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	name := "payments_migrate_" + strings.ToLower(rand.Text()[:10])
	u.Path = "/" + name
	t.Cleanup(func() { exec(t, admin, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)") })
	return config{DatabaseURL: u.String()}
}

func databaseExists(t *testing.T, databaseURL string) bool {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	conn, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(context.Background(), `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	return exists
}

func exec(t *testing.T, databaseURL, sql string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// migrationVersions lists the versions of migrations/ in order ("000030_webhooks.up.sql": "30").
func migrationVersions() []string {
	files, _ := migrations.FS.ReadDir(".") // sorted by name, so by zero-padded version
	var versions []string
	for _, f := range files {
		if v, _, ok := strings.Cut(f.Name(), "_"); ok && strings.HasSuffix(f.Name(), ".up.sql") {
			n, _ := strconv.Atoi(v)
			versions = append(versions, strconv.Itoa(n))
		}
	}
	return versions
}

// TestMigrateDownRevertsOneByDefault: down without a count reverts the last migration alone,
// and up applies it again.
func TestMigrateDownRevertsOneByDefault(t *testing.T) {
	t.Parallel()
	cfg := config{DatabaseURL: dbtest.NewURL(t)}
	versions := migrationVersions()
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"down"}, "version " + versions[len(versions)-2] + "\n"},
		{[]string{"up"}, "version " + versions[len(versions)-1] + "\n"},
	} {
		mig, err := parseMigrate(step.args)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := migrateCommand(context.Background(), cfg, mig, &out); err != nil || out.String() != step.want {
			t.Errorf("migrate %v: %v, printed %q, want %q", step.args, err, out.String(), step.want)
		}
	}
}
