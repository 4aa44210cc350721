package db

import (
	"context"
	"errors"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// demotedKey marks, in a connection's CustomData, that its server refused a write as
// read-only.
const demotedKey = "payments-api.demoted"

// dropDemoted is a tracer that empties the pool once a statement meets a read-only server
// (SQLSTATE 25006): the node the pool connected to as a primary has been demoted to a
// standby (a failover), or has been made read-only. Its connections stay open and answer
// every read, so nothing else would close them before their lifetime ends, and every write
// sent through them would fail. The statement's connection is marked; when it goes back to
// the pool, the pool is reset: idle connections close at once, connections in use close
// when they are released, and new ones are opened where DATABASE_URL now leads (the new
// primary, behind a proxy or with target_session_attrs=read-write).
//
// A reset costs every open connection, but a read-only answer to a write is rare, and the
// connections beside it went to the same node: keeping them would fail the next writes too.
type dropDemoted struct{}

var (
	_ pgx.QueryTracer       = dropDemoted{}
	_ pgx.BatchTracer       = dropDemoted{}
	_ pgxpool.ReleaseTracer = dropDemoted{}
)

// isReadOnly reports whether the server refused the statement because it is read-only.
func isReadOnly(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.ReadOnlySQLTransaction
}

func (dropDemoted) markIf(conn *pgx.Conn, err error) {
	if isReadOnly(err) {
		conn.PgConn().CustomData()[demotedKey] = true
	}
}

func (dropDemoted) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (d dropDemoted) TraceQueryEnd(_ context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	d.markIf(conn, data.Err)
}

func (dropDemoted) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (d dropDemoted) TraceBatchQuery(_ context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	d.markIf(conn, data.Err)
}

func (dropDemoted) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TraceRelease runs before the connection is returned, so the reset also closes the
// connection being released.
func (dropDemoted) TraceRelease(pool *pgxpool.Pool, data pgxpool.TraceReleaseData) {
	if data.Conn.PgConn().CustomData()[demotedKey] == true {
		pool.Reset()
	}
}
