// Package db is the database layer: the sqlc-generated queries (*.gen.go, from queries/*.sql),
// the one transaction helper, error translation and migrations. It imports the domain package
// and pgx; nothing above it sees pgx.
package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// InTx runs fn in one READ COMMITTED transaction and commits if fn returns nil.
//
// The rollback sits in a defer with a context that is never canceled: when the request's
// context is canceled mid-transaction the rollback must still reach the server, or the
// connection would go back to the pool with an open transaction. (READ COMMITTED, not
// REPEATABLE READ: INSERT ... ON CONFLICT under REPEATABLE READ fails with 40001 when it
// meets a row committed after the snapshot, which the idempotency claim does by design.)
func InTx(ctx context.Context, pool *pgxpool.Pool, fn func(q *Queries) error) (err error) {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer func() {
		if rbErr := tx.Rollback(context.WithoutCancel(ctx)); rbErr != nil && !errors.Is(rbErr, pgx.ErrTxClosed) {
			err = errors.Join(err, fmt.Errorf("rollback: %w", rbErr))
		}
	}()
	if err := fn(New(tx)); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
