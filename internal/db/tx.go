// Package db is the database layer: the sqlc-generated queries (*.gen.go, from queries/*.sql),
// the one transaction helper, error translation and migrations. It imports the domain package,
// trace (the transaction helper reports its commit) and pgx.
//
// Of the server's packages, only this one holds SQL and interprets pgx errors (Translate,
// IsUnavailable). Above it pgx appears only as handles passed through: services take the
// *pgxpool.Pool and hand it to New and InTx; River takes the pool, and a Tx's PgxTx to
// enqueue a job in the transaction that causes it; handlers also ping the pool for /readyz,
// and metrics reads its statistics.
package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/trace"
)

// rollbackTimeout bounds a rollback that runs after the caller's context is gone.
const rollbackTimeout = 5 * time.Second

// Tx is one open transaction. Its embedded Queries run the sqlc queries inside it; PgxTx is
// the transaction itself, for code that joins it directly: River's InsertTx enqueues a job in
// the transaction that causes it, so the job exists if and only if the change commits.
//
// Later runs the same queries, but only :exec statements, and not at once: they are queued
// and sent together, in one round trip, just before COMMIT. It is for writes that nothing in
// the transaction reads back (an outbox event, a stored idempotent response): each one sent
// on its own would cost a round trip to the database while the transaction holds its locks.
// An error in a queued statement fails the commit, so the transaction still commits all or
// nothing.
type Tx struct {
	*Queries
	Later *Queries
	PgxTx pgx.Tx
}

// InTx runs fn in one READ COMMITTED transaction and commits if fn returns nil.
//
// The rollback sits in a defer with a context detached from the caller's (with a short
// timeout of its own, as River's RollbackWithoutCancel): when the request's context is
// canceled mid-transaction the rollback must still reach the server, or the connection would
// go back to the pool with an open transaction. (READ COMMITTED, not REPEATABLE READ:
// INSERT ... ON CONFLICT under REPEATABLE READ fails with 40001 when it meets a row committed
// after the snapshot, which the idempotency claim does by design.)
func InTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx Tx) error) (err error) {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer func() {
		rbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		if rbErr := tx.Rollback(rbCtx); rbErr != nil && !errors.Is(rbErr, pgx.ErrTxClosed) {
			err = errors.Join(err, fmt.Errorf("rollback: %w", rbErr))
		}
	}()
	later := &laterQueue{}
	if err := fn(Tx{Queries: New(tx), Later: New(later), PgxTx: tx}); err != nil {
		trace.Decide(ctx, trace.Transaction, "rolled_back")
		return err
	}
	if err := commit(ctx, tx, later); err != nil {
		trace.Decide(ctx, trace.Transaction, "rolled_back")
		return err
	}
	trace.Decide(ctx, trace.Transaction, "committed")
	return nil
}

// commit sends the deferred writes and commits: the "commit" phase of the request's trace.
func commit(ctx context.Context, tx pgx.Tx, later *laterQueue) error {
	defer trace.Start(ctx, "commit").End()
	if err := later.send(ctx, tx); err != nil {
		return fmt.Errorf("deferred writes: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
