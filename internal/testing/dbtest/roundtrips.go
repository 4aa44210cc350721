package dbtest

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// RoundTrips is a pgx tracer that counts a connection's round trips to the server: a
// statement sent alone is one, a batch is one however many statements it carries, and so is
// preparing a statement before its first run on a connection (pgx's statement cache). A test
// that counts the round trips of a piece of work runs it once first, on a pool of one
// connection, so that every statement is prepared before counting starts.
type RoundTrips struct{ n atomic.Int64 }

var (
	_ pgx.QueryTracer   = (*RoundTrips)(nil)
	_ pgx.BatchTracer   = (*RoundTrips)(nil)
	_ pgx.PrepareTracer = (*RoundTrips)(nil)
)

// NewCountedPool creates a fresh migrated database for t and a pool of one connection to it
// whose round trips are counted, closed when t ends. With one connection, work run once
// before counting has prepared every statement the counted run sends.
func NewCountedPool(t testing.TB) (*pgxpool.Pool, *RoundTrips) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	trips := &RoundTrips{}
	cfg.ConnConfig.Tracer = trips
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("connect to test database: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool, trips
}

// Count is the round trips since the last Reset.
func (r *RoundTrips) Count() int64 { return r.n.Load() }

// Reset starts counting again from zero.
func (r *RoundTrips) Reset() { r.n.Store(0) }

func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (*RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (*RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (*RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (r *RoundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (*RoundTrips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}
