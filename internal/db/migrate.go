package db

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // registers the pgx5:// driver
	"github.com/golang-migrate/migrate/v4/source"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/payments-api/payments-api/migrations"
)

// Migrator applies the embedded migrations in migrations/ to the database at databaseURL.
type Migrator struct {
	m   *migrate.Migrate
	src source.Driver
}

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
	// pgxpool's own settings (pool_max_conns, ...) configure the server's pool, not this one
	// connection: the migration driver would send them to PostgreSQL, which refuses unknown
	// parameters and the server would not start.
	query := u.Query()
	for name := range query {
		if strings.HasPrefix(name, "pool_") {
			query.Del(name)
		}
	}
	u.RawQuery = query.Encode()
	m, err := migrate.NewWithSourceInstance("iofs", src, u.String())
	if err != nil {
		return nil, fmt.Errorf("open migrations: %w", err)
	}
	return &Migrator{m: m, src: src}, nil
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

// Force records version as applied and clean without running anything: how an operator
// marks a dirty database fixed after repairing a half-applied migration by hand. 0 means
// nothing is applied. version must be 0 or one of the embedded migrations.
func (mg *Migrator) Force(version uint) error {
	target := int(version)
	if version == 0 {
		target = database.NilVersion
	} else {
		up, _, err := mg.src.ReadUp(version)
		if err != nil {
			return fmt.Errorf("migrate force %d: no such migration", version)
		}
		_ = up.Close() // an embedded file: nothing to release
	}
	if err := mg.m.Force(target); err != nil {
		return fmt.Errorf("migrate force %d: %w", version, err)
	}
	return nil
}

// Previous is the version of the migration before version (0 when it is the first): what a
// database is at once a failed migration is undone by hand.
func (mg *Migrator) Previous(version uint) (uint, error) {
	prev, err := mg.src.Prev(version)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	return prev, err
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
