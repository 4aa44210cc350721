package db

import (
	"context"
	"errors"
	"time"

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
	if err == nil {
		return false // every statement's end comes here: no PgError allocated for none
	}
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

// failoverWaitKey is the context key of WithFailoverWait.
type failoverWaitKey struct{}

// WithFailoverWait returns ctx under which work that finds the database unavailable
// (IsUnavailable: no connection, a connection cut, a pooler with no server to give it)
// before it has changed anything is tried again, on another connection, until it succeeds or
// wait has passed since the first try: a transaction that cannot begin (InTx) and a read
// (Reads). A failover leaves no primary for a second or two; without the wait, every
// request that starts in that time fails, and each client comes back only after its
// Retry-After. A transaction is retried only until BEGIN has answered: nothing of it has
// run and fn has seen nothing. One cut off later is not, since fn has acted on what it
// read; its request answers 503 and the client retries it with its key.
//
// The wait rides on the context as the deadline does: it is the request's budget, set
// where the request starts (handlers). Jobs set none: River retries a failed job itself.
func WithFailoverWait(ctx context.Context, wait time.Duration) context.Context {
	if wait <= 0 {
		return ctx
	}
	return context.WithValue(ctx, failoverWaitKey{}, wait)
}

// The pauses between tries: short, since a switchover's new primary accepts a second or two
// after the old one stopped, and the cluster's PgBouncer and HAProxy notice it within a tenth
// of a second (deploy/cluster/pgbouncer.ini, deploy/ha/haproxy-postgres.cfg).
const (
	firstRetryPause = 50 * time.Millisecond
	maxRetryPause   = 100 * time.Millisecond
)

// failoverRetry paces the tries of one transaction's BEGIN or one read.
type failoverRetry struct {
	until time.Time // the zero time: no retry
	pause time.Duration
}

func newFailoverRetry(ctx context.Context) failoverRetry {
	wait, _ := ctx.Value(failoverWaitKey{}).(time.Duration)
	if wait <= 0 {
		return failoverRetry{}
	}
	return failoverRetry{until: time.Now().Add(wait), pause: firstRetryPause}
}

// worth reports whether err is worth another try: the database was unavailable, the caller
// is still waiting and the next try fits in the wait.
func (r *failoverRetry) worth(ctx context.Context, err error) bool {
	return !r.until.IsZero() && ctx.Err() == nil && IsUnavailable(err) &&
		time.Now().Add(r.pause).Before(r.until)
}

// wait pauses before the next try, longer each time; false when ctx ended first.
func (r *failoverRetry) wait(ctx context.Context) bool {
	t := time.NewTimer(r.pause)
	defer t.Stop()
	r.pause = min(2*r.pause, maxRetryPause)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// errNotARead is what Reads answers a statement without rows with.
var errNotARead = errors.New("db: Reads is for statements that change nothing; write in InTx")

// Reads returns queries on pool for statements that change nothing, each sent again, on
// another connection, while the database is unavailable and ctx's failover wait allows
// (WithFailoverWait). A read that failed changed nothing, so it may be tried again wherever
// it failed; a write may not (its answer can be lost after it committed), so none goes
// through Reads: an :exec statement is refused, and a write that returns rows belongs in
// InTx. A read is sent again when it fails as it is sent or, for a :one read, as its row is
// scanned; an error met while a :many read's rows are read is the caller's.
func Reads(pool *pgxpool.Pool) *Queries { return New(reads{pool}) }

// reads is the DBTX behind Reads.
type reads struct{ pool *pgxpool.Pool }

func (reads) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, errNotARead
}

func (r reads) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	retry := newFailoverRetry(ctx)
	for {
		rows, err := r.pool.Query(ctx, sql, args...)
		if err == nil || !retry.worth(ctx, err) || !retry.wait(ctx) {
			return rows, err
		}
	}
}

func (r reads) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return readRow{r.pool, ctx, sql, args}
}

// readRow is a :one read, sent when it is scanned.
type readRow struct {
	pool *pgxpool.Pool
	ctx  context.Context //nolint:containedctx // the row is sent when scanned, under the caller's context
	sql  string
	args []any
}

func (r readRow) Scan(dest ...any) error {
	retry := newFailoverRetry(r.ctx)
	for {
		err := r.pool.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...)
		if err == nil || !retry.worth(r.ctx, err) || !retry.wait(r.ctx) {
			return err
		}
	}
}
