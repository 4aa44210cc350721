// Package db is the database layer: the sqlc-generated queries (*.gen.go, from queries/*.sql),
// the one transaction helper (InTx), reads outside a transaction (Reads), both of which ride
// out a failover (WithFailoverWait), error translation and migrations. It imports the domain
// package, trace (the transaction helper reports its commit) and pgx.
//
// Of the server's packages, only this one holds SQL and interprets pgx errors (Translate,
// IsUnavailable). Above it pgx appears only as handles passed through: services take the
// *pgxpool.Pool and hand it to New, Reads and InTx; River takes the pool, and a Tx's PgxTx to
// enqueue a job in the transaction that causes it; handlers also ping the pool for /readyz,
// and metrics reads its statistics.
package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/trace"
)

// rollbackTimeout bounds a rollback that runs after the caller's context is gone.
const rollbackTimeout = 5 * time.Second

// txOptions: READ COMMITTED, not REPEATABLE READ. Each statement then reads what had
// committed when it started, which the idempotency claim relies on: the key's row is read
// by the statement after the key's lock, so it sees the use of the key that released the
// lock. Under REPEATABLE READ it would read the transaction's first snapshot, taken before
// the lock was answered.
var txOptions = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}

// Tx is one open transaction. Its embedded Queries run the sqlc queries inside it.
//
// Later runs the same queries, but only :exec statements, and not at once: they are queued
// and sent together with COMMIT, in the transaction's last round trip. It is for writes that
// nothing in the transaction reads back (a payment built whole in Go, an outbox event, a
// stored idempotent response): each one sent on its own would cost a round trip to the
// database while the transaction holds its locks. An error in a queued statement fails the
// commit, so the transaction still commits all or nothing.
type Tx struct {
	*Queries
	Later *Queries
	conn  *txConn
}

// PgxTx is the transaction itself, for code that joins it directly: River's InsertTx enqueues
// a job in the transaction that causes it, so the job exists if and only if the change
// commits. It begins the transaction if no statement has yet.
func (tx Tx) PgxTx(ctx context.Context) (pgx.Tx, error) {
	return tx.conn.begun(ctx)
}

// InTx runs fn in one READ COMMITTED transaction and commits if fn returns nil. The reads
// in ahead go with its first statement (see Ahead).
//
// A transaction costs the round trips of its statements and no more. BEGIN is not sent on
// its own: it goes with the transaction's first statement, in one batch (pgx's
// Batch.BeginTx). COMMIT goes with the statements queued on Later. So a transaction of one
// read and some writes (an idempotent create: the key's lock and row, then the payment, its
// event and the key's row with the answer) is two round trips, where BEGIN, each statement
// and COMMIT sent in turn would be six.
//
// A transaction that cannot begin because the database is unavailable (a failover under
// way) is begun again on another connection, for as long as ctx's failover wait allows
// (WithFailoverWait): until BEGIN has answered, nothing of it has run and fn has seen nothing.
//
// The rollback sits in a defer with a context detached from the caller's (with a short
// timeout of its own, as River's RollbackWithoutCancel): when the request's context is
// canceled mid-transaction the rollback must still reach the server. Should it fail, or a
// COMMIT's answer be lost, the connection is still in a transaction when it is released,
// and the pool closes it rather than hand it to another request.
func InTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx Tx) error, ahead ...Ahead) (err error) {
	conn := &txConn{pool: pool, ahead: ahead, retry: newFailoverRetry(ctx)}
	if err := conn.acquire(ctx); err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer conn.release()
	defer func() {
		rbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		if rbErr := conn.rollback(rbCtx); rbErr != nil {
			err = errors.Join(err, fmt.Errorf("rollback: %w", rbErr))
		}
	}()
	var later pgx.Batch
	if err := fn(Tx{Queries: New(conn), Later: Queue(&later), conn: conn}); err != nil {
		trace.Decide(ctx, trace.Transaction, "rolled_back")
		return err
	}
	if err := conn.commit(ctx, &later); err != nil {
		trace.Decide(ctx, trace.Transaction, "rolled_back")
		return err
	}
	trace.Decide(ctx, trace.Transaction, "committed")
	return nil
}

// txConn is the DBTX a Tx's queries run on: the transaction's connection, with the
// transaction begun by the first statement that needs an answer.
type txConn struct {
	pool   *pgxpool.Pool
	pooled *pgxpool.Conn // nil between a failed BEGIN and the next connection
	conn   *pgx.Conn     // pooled's
	retry  failoverRetry
	tx     pgx.Tx  // nil until the first statement
	ahead  []Ahead // sent with the first statement, answered when its batch closes
	done   bool    // committed: nothing is left to roll back
}

// acquire takes a connection from the pool, waiting out an unavailable database as retry
// allows.
func (c *txConn) acquire(ctx context.Context) error {
	for {
		pooled, err := c.pool.Acquire(ctx)
		if err == nil {
			c.pooled, c.conn = pooled, pooled.Conn()
			return nil
		}
		if !c.retry.worth(ctx, err) || !c.retry.wait(ctx) {
			return err
		}
	}
}

func (c *txConn) release() {
	if c.pooled != nil {
		c.pooled.Release()
		c.pooled, c.conn = nil, nil
	}
}

// beginAgain decides what to do after BEGIN failed with err: when the database was
// unavailable and the failover wait has time left, it gives the connection back (the pool
// closes it, broken or in a failed transaction), waits, takes another and reports true; the
// caller then sends BEGIN again. Otherwise it reports false and the caller returns err.
func (c *txConn) beginAgain(ctx context.Context, err error) bool {
	if !c.retry.worth(ctx, err) {
		return false
	}
	c.tx = nil
	c.release()
	return c.retry.wait(ctx) && c.acquire(ctx) == nil
}

// send runs the statement sql as the transaction's first, together with BEGIN and the reads
// sent ahead, and returns its batch with BEGIN's answer read: the statement's answer is next.
// The caller closes it, which answers the reads. A BEGIN that fails because the database is
// unavailable is sent again, with the rest of the batch, as beginAgain allows.
func (c *txConn) send(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	for {
		br, err := c.trySend(ctx, sql, args)
		if err == nil || !c.beginAgain(ctx, err) {
			return br, err
		}
	}
}

func (c *txConn) trySend(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	var b pgx.Batch
	b.BeginTx(txOptions)
	b.Queue(sql, args...)
	for _, a := range c.ahead {
		a.queue(&b)
	}
	br := c.conn.SendBatch(ctx, &b)
	c.tx = br.Tx()
	if _, err := br.Exec(); err != nil {
		_ = br.Close() // its error is BEGIN's
		return nil, fmt.Errorf("begin transaction: %w", err)
	}
	return br, nil
}

// begun is the transaction, begun now (BEGIN alone) if no statement has begun it.
func (c *txConn) begun(ctx context.Context) (pgx.Tx, error) {
	if c.tx != nil {
		return c.tx, nil
	}
	for {
		tx, err := c.conn.BeginTx(ctx, txOptions)
		if err == nil {
			c.tx = tx
			return tx, nil
		}
		if !c.beginAgain(ctx, err) {
			return nil, fmt.Errorf("begin transaction: %w", err)
		}
	}
}

func (c *txConn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if c.tx != nil {
		return c.tx.Exec(ctx, sql, args...)
	}
	br, err := c.send(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	return tag, errors.Join(err, closeUnlessFailed(br, err))
}

func (c *txConn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if c.tx != nil {
		return c.tx.Query(ctx, sql, args...)
	}
	br, err := c.send(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, errors.Join(err, closeUnlessFailed(br, err))
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (c *txConn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if c.tx != nil {
		return c.tx.QueryRow(ctx, sql, args...)
	}
	br, err := c.send(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{br}
}

// commit sends the deferred writes and COMMIT in one round trip: the "commit" phase of the
// request's trace. If a write fails, PostgreSQL skips the rest of the batch, COMMIT
// included, and the transaction is left to roll back.
//
// COMMIT is never cancelled. With a synchronous standby (deploy/ha), PostgreSQL answers a
// COMMIT once the standby has its WAL, and a COMMIT told to stop waiting (a cancel request,
// which pgx sends when a statement's context ends or its connection fails) commits on the
// primary alone: visible at once, so a retry replays it, and lost if the primary then fails
// over. So the batch is sent detached from ctx, and waited for on a goroutine that keeps the
// connection until PostgreSQL answers. When ctx ends first, commit returns its cause (a 503,
// whose retry with the same Idempotency-Key meets the key's lock, still held, then the
// outcome) and the connection goes back to the pool once the answer comes. (statement_timeout
// does not end the wait: PostgreSQL turns it off before a COMMIT commits.)
func (c *txConn) commit(ctx context.Context, later *pgx.Batch) error {
	defer trace.Start(ctx, "commit").End()
	if err := context.Cause(ctx); err != nil {
		return err // nothing sent: the transaction rolls back
	}
	conn, tx := c.conn, c.tx // read here: once ctx ends, c gives them up while send runs
	send := func() error {
		detached := context.WithoutCancel(ctx)
		if tx == nil {
			// Only writes were queued, or nothing at all. A batch without BEGIN runs as one
			// implicit transaction: all of it commits, or none.
			if err := conn.SendBatch(detached, later).Close(); err != nil {
				return fmt.Errorf("deferred writes: %w", err)
			}
			return nil
		}
		writes := later.Len()
		later.Queue("commit")
		br := tx.SendBatch(detached, later)
		err := committed(br, writes)
		return errors.Join(err, closeUnlessFailed(br, err))
	}
	answered := make(chan error, 1)
	go func() { answered <- send() }()
	select {
	case err := <-answered:
		c.done = err == nil
		return err
	case <-ctx.Done():
		pooled := c.pooled
		c.pooled, c.conn, c.done = nil, nil, true // the goroutine below owns them now
		go func() {
			<-answered       //nolint:errcheck // the outcome reaches the client through its retry, by the key
			pooled.Release() // closed by the pool, unless the transaction ended
		}()
		return fmt.Errorf("commit sent, not yet answered: %w", context.Cause(ctx))
	}
}

// committed reads the answers of a batch of writes then COMMIT.
func committed(br pgx.BatchResults, writes int) error {
	for range writes {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("deferred writes: %w", err)
		}
	}
	tag, err := br.Exec()
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if tag.String() == "ROLLBACK" { // the transaction had already failed: COMMIT rolls it back
		return fmt.Errorf("commit: %w", pgx.ErrTxCommitRollback)
	}
	return nil
}

// rollback ends a transaction that did not commit. The connection says whether one is open:
// COMMIT may have ended it either way even when its answer was an error.
func (c *txConn) rollback(ctx context.Context) error {
	if c.tx == nil || c.done || c.conn == nil || c.conn.IsClosed() || c.conn.PgConn().TxStatus() == 'I' {
		return nil
	}
	if err := c.tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	return nil
}

// closeUnlessFailed closes a batch whose statement has been answered. After a failed
// statement its error is the batch's too, and is already reported.
func closeUnlessFailed(br pgx.BatchResults, err error) error {
	closeErr := br.Close()
	if err != nil {
		return nil
	}
	return closeErr
}

// batchRow is the answer of a transaction's first statement, a :one query: the batch closes
// once the row is read.
type batchRow struct{ br pgx.BatchResults }

func (r batchRow) Scan(dest ...any) error {
	err := r.br.QueryRow().Scan(dest...)
	return errors.Join(err, closeUnlessFailed(r.br, err))
}

// batchRows is the answer of a transaction's first statement, a :many query: the batch
// closes with the rows.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r *batchRows) Close() {
	r.Rows.Close()
	_ = r.br.Close() // an error of the rows is theirs (Err); one of a read sent ahead, the read's
}
