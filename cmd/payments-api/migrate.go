package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/payments-api/payments-api/internal/db"
)

const migrateUsage = `Usage: payments-api migrate COMMAND

  up          create the database if it is missing, then apply every pending migration
  down [N]    revert the last N migrations, the last one when N is left out
  version     print the applied version
  force V     record version V as applied and clean, without running anything: after a
              migration failed half-way and you repaired the schema by hand (0: none applied)

Only up creates the database; the others fail if it does not exist. DATABASE_URL names it
(DATABASE_DIRECT_URL when set: migrations never go through a pooler).
`

// migration is one parsed migrate command: action is up, down, version or force; n is
// down's count (1 when left out) or force's version.
type migration struct {
	action string
	n      uint
}

// parseMigrate reads the arguments after "migrate". It runs before anything connects, so a
// typo never touches the database.
func parseMigrate(args []string) (migration, error) {
	usageErr := fmt.Errorf("usage: payments-api migrate up | down [N] | version | force V (see payments-api migrate --help)")
	if len(args) == 0 {
		return migration{}, usageErr
	}
	m := migration{action: args[0]}
	switch {
	case len(args) == 1 && (m.action == "up" || m.action == "version"):
		return m, nil
	case len(args) == 1 && m.action == "down": // one step: never every migration by default
		m.n = 1
		return m, nil
	case len(args) == 2 && (m.action == "down" || m.action == "force"):
		n, err := strconv.ParseUint(args[1], 10, 31)
		if err != nil {
			return migration{}, fmt.Errorf("migrate %s: want a whole number, got %q", m.action, args[1])
		}
		if m.action == "down" && n == 0 {
			return migration{}, fmt.Errorf("migrate down: N must be at least 1")
		}
		m.n = uint(n)
		return m, nil
	}
	return migration{}, usageErr
}

// migrateCommand runs a parsed migrate command and prints the resulting version.
func migrateCommand(ctx context.Context, cfg config, mig migration, out io.Writer) (err error) {
	direct := cfg.appConfig().DirectDatabaseURL()
	if mig.action == "up" { // the only command that may create the database
		pool, err := db.Open(ctx, direct, db.Options{})
		if err != nil {
			return err
		}
		pool.Close()
	}
	// Direct, never through a pooler: the migrator's advisory lock is held by its session.
	m, err := db.NewMigrator(direct)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.Close()) }()

	switch mig.action {
	case "up":
		err = m.Up()
	case "down":
		err = m.Down(int(mig.n))
	case "force":
		err = m.Force(mig.n)
	}
	if err != nil {
		return err
	}
	version, dirty, err := m.Version()
	if err != nil {
		return err
	}
	report := fmt.Sprintf("version %d", version)
	if dirty {
		prev, err := m.Previous(version)
		if err != nil {
			return err
		}
		report += fmt.Sprintf(" (dirty: migration %d failed half-way; repair the schema by hand, then record the version it"+
			" is at with payments-api migrate force: %d if you completed the migration, %d if you undid it)", version, version, prev)
	}
	_, err = fmt.Fprintln(out, report)
	return err
}
