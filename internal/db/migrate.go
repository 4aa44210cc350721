package db

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // registers the pgx5:// driver
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/payments-api/payments-api/migrations"
)

// Migrator applies the embedded migrations in migrations/ to the database at databaseURL.
type Migrator struct{ m *migrate.Migrate }

// NewMigrator opens its own connection: golang-migrate takes a session-level advisory lock,
// so two servers starting at once apply each migration exactly once.
func NewMigrator(databaseURL string) (*Migrator, error) {
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	u, err := url.Parse(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	u.Scheme = "pgx5" // the driver golang-migrate registers for pgx v5
	m, err := migrate.NewWithSourceInstance("iofs", src, u.String())
	if err != nil {
		return nil, fmt.Errorf("open migrations: %w", err)
	}
	return &Migrator{m: m}, nil
}

// Up applies every pending migration; already up to date is not an error.
func (mg *Migrator) Up() error {
	if err := mg.m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate up: %w", err)
	}
	return nil
}

// Down reverts the last n migrations.
func (mg *Migrator) Down(n int) error {
	if err := mg.m.Steps(-n); err != nil {
		return fmt.Errorf("migrate down %d: %w", n, err)
	}
	return nil
}

// Version reports the applied version and whether a failed migration left it dirty
// (0, false when nothing is applied yet).
func (mg *Migrator) Version() (version uint, dirty bool, err error) {
	version, dirty, err = mg.m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, nil
	}
	return version, dirty, err
}

// Close releases the migrator's connection.
func (mg *Migrator) Close() error {
	srcErr, dbErr := mg.m.Close()
	return errors.Join(srcErr, dbErr)
}
