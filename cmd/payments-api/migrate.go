package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/payments-api/payments-api/internal/db"
)

// migrateCommand runs `migrate up|down N|version`. The database is created first if missing,
// like the server does, so `migrate up` also works on a fresh machine.
func migrateCommand(ctx context.Context, cfg config, args []string, out io.Writer) (err error) {
	pool, err := db.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	pool.Close()
	m, err := db.NewMigrator(cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.Close()) }()

	switch {
	case len(args) == 1 && args[0] == "up":
		err = m.Up()
	case len(args) == 2 && args[0] == "down":
		n, convErr := strconv.Atoi(args[1])
		if convErr != nil || n < 1 {
			return fmt.Errorf("migrate down: N must be a positive number, got %q", args[1])
		}
		err = m.Down(n)
	case len(args) == 1 && args[0] == "version":
	default:
		return fmt.Errorf("usage: payments-api migrate up | down N | version")
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
		report += " (dirty: a migration failed half-way; fix it by hand, then force the version)"
	}
	_, err = fmt.Fprintln(out, report)
	return err
}
