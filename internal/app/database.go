package app

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
)

// openDatabase opens the pool that requests and jobs share and, when DatabaseURL goes
// through a transaction pooler, a small pool of direct connections for River's LISTEN. The
// direct one opens first: it is the one that may create the database. Then it migrates and
// seeds.
func (a *App) openDatabase(ctx context.Context) (err error) {
	opts := db.Options{StatementTimeout: a.cfg.RequestTimeout, TracerProvider: a.cfg.Tracing}
	if a.cfg.DatabaseDirectURL != "" {
		opts.MaxConns = 2 // River's listener holds one
		if a.direct, err = a.open(ctx, a.cfg.DatabaseDirectURL, opts); err != nil {
			return err
		}
		a.release = append(a.release, a.direct.Close)
		// No statement_timeout or plan_cache_mode here: PgBouncer refuses them as startup
		// parameters, and a SET would stay with whichever server connection ran it. The
		// pooler sets them on each server connection it opens (connect_query in
		// deploy/cluster/pgbouncer.ini).
		opts = db.Options{Pooled: true, TracerProvider: a.cfg.Tracing}
	}
	if a.Pool, err = a.open(ctx, a.cfg.DatabaseURL, opts); err != nil {
		return err
	}
	a.release = append(a.release, a.Pool.Close)
	return a.migrateAndSeed(ctx)
}

// open opens a pool on url, retrying for up to DatabaseConnectTimeout while the database
// cannot be reached: under docker compose or an orchestrator the server may start before
// PostgreSQL accepts connections. An error waiting cannot fix (bad credentials, a bad URL)
// ends it at once.
func (a *App) open(ctx context.Context, url string, opts db.Options) (*pgxpool.Pool, error) {
	attempts, cancel := context.WithTimeout(ctx, a.cfg.DatabaseConnectTimeout)
	defer cancel()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		pool, err := db.Open(attempts, url, opts)
		if err == nil || !db.IsUnavailable(err) {
			return pool, err
		}
		a.logger.Warn("database unreachable, retrying", "error", err, "retry_in", wait)
		select {
		case <-attempts.Done():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("database unreachable for DATABASE_CONNECT_TIMEOUT (%s): %w", a.cfg.DatabaseConnectTimeout, err)
		case <-time.After(wait):
		}
	}
}
