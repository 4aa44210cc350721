package db

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	oteltrace "go.opentelemetry.io/otel/trace"
)

const (
	defaultMaxConns = 20
	// defaultConnectTimeout bounds one attempt to open a connection (dial, TLS, startup): a
	// frozen server accepts the TCP connection and then never answers.
	defaultConnectTimeout = 5 * time.Second
	// defaultPingTimeout bounds the ping with which the pool checks a connection that sat
	// idle for over a second before lending it. Unbounded, a connection to a frozen server
	// (a primary stopped, its replacement already promoted) held each request that drew it
	// until the request's own deadline; bounded, the pool drops it and opens another, which
	// a multi-host DATABASE_URL points at the new primary.
	defaultPingTimeout = time.Second
)

// Options tunes the pool. The zero value is the server's pool: 20 connections, each
// statement planned once for all its values (see Open), no statement_timeout.
type Options struct {
	// StatementTimeout is the pool's statement_timeout: the server itself stops a statement
	// that runs longer, even after the client that wanted it has given up. It is also the
	// pool's idle_in_transaction_session_timeout: a transaction whose client went silent for
	// longer than a request may take (cut off by a partition, its connection never closed)
	// would otherwise hold its locks, an Idempotency-Key's among them, until TCP gives up,
	// hours later.
	StatementTimeout time.Duration
	// MaxConns caps the pool when the URL sets no pool_max_conns; 0 means the default (20).
	MaxConns int32
	// Pooled says databaseURL is a transaction pooler's (PgBouncer). A pooler refuses
	// settings sent as a connection starts, so Open sends none; the pooler applies them to
	// each server connection it opens (connect_query in deploy/cluster/pgbouncer.ini).
	Pooled bool
	// TracerProvider, when set, records a span for every statement a traced request or job
	// runs (see traceQueries).
	TracerProvider oteltrace.TracerProvider
}

// Open connects a pool to databaseURL and checks the connection. When the database does not
// exist yet it is created (connecting to the server's "postgres" database to do so), so a
// fresh machine needs no manual setup. Settings in the URL (pool_max_conns, connect_timeout,
// statement_timeout, plan_cache_mode) win over the defaults set here. A write refused because
// the server turned read-only (a failover demoted it) empties the pool (see dropDemoted).
//
// Every connection plans each prepared statement once, for all its values (plan_cache_mode =
// force_generic_plan). Left to itself, PostgreSQL plans a statement anew for its first five
// runs and keeps a generic plan only if that looks no costlier: a page's LIMIT is a
// parameter, which a generic plan takes for a tenth of the rows, so once an account held
// many payments every list request was planned again, and a deep page grew slower with the
// account (docs/performance.md, latency against the data held). The generic plans are also
// the ones this package's plan tests check, each an index range on its equality columns
// whatever the statistics say: the plan that runs is the plan that was tested.
func Open(ctx context.Context, databaseURL string, opts Options) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	// A payment holds its connection for its whole transaction, simulated processor latency
	// included, so pgxpool's default of max(4, CPUs) would cap a 200 ms processor at 20
	// payments a second.
	if !strings.Contains(databaseURL, "pool_max_conns") {
		cfg.MaxConns = cmp.Or(opts.MaxConns, defaultMaxConns)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	if !strings.Contains(databaseURL, "pool_ping_timeout") {
		cfg.PingTimeout = defaultPingTimeout
	}
	for _, name := range []string{"statement_timeout", "idle_in_transaction_session_timeout"} {
		if _, set := cfg.ConnConfig.RuntimeParams[name]; !set && opts.StatementTimeout > 0 {
			cfg.ConnConfig.RuntimeParams[name] = fmt.Sprint(opts.StatementTimeout.Milliseconds())
		}
	}
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set && !opts.Pooled {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	cfg.AfterConnect = rawJSON
	addTracer(cfg.ConnConfig, dropDemoted{})
	if opts.TracerProvider != nil {
		traceQueries(cfg.ConnConfig, opts.TracerProvider)
	}
	pool, err := connect(ctx, cfg)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.InvalidCatalogName {
		if err := createDatabase(ctx, cfg.ConnConfig); err != nil {
			return nil, err
		}
		pool, err = connect(ctx, cfg)
	}
	return pool, err
}

func connect(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.ConnConfig.Database, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database %q: %w", cfg.ConnConfig.Database, err)
	}
	return pool, nil
}

func createDatabase(ctx context.Context, target *pgx.ConnConfig) error {
	admin := target.Copy()
	admin.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, admin)
	if err != nil {
		return fmt.Errorf("connect to create database %q: %w", target.Database, err)
	}
	// Whether the database now exists does not depend on how the goodbye goes.
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	// CREATE DATABASE takes no parameters; the name is quoted as an identifier.
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{target.Database}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.DuplicateDatabase { // another process won
		return nil
	}
	if err != nil {
		return fmt.Errorf("create database %q: %w", target.Database, err)
	}
	return nil
}
