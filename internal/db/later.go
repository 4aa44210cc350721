package db

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// errNotDeferrable is what a query with results answers through Tx.Later: its rows would
// only exist after the transaction's last round trip, too late for the caller to read.
var errNotDeferrable = errors.New("db: only :exec statements can be deferred to the commit")

// Queue returns queries whose :exec statements are queued on b instead of sent, so the
// sqlc-generated methods (their SQL and arguments) are reused unchanged. Tx.Later is one, on
// the batch that ends its transaction; the load tool's floor server, which keeps its own
// transaction, sends one of its own.
func Queue(b *pgx.Batch) *Queries {
	return New(batchQueue{b})
}

// batchQueue is the DBTX behind Queue.
type batchQueue struct{ batch *pgx.Batch }

func (q batchQueue) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	q.batch.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (batchQueue) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return nil, errNotDeferrable
}

func (batchQueue) QueryRow(context.Context, string, ...any) pgx.Row {
	return errRow{errNotDeferrable}
}

// errRow is a row that could not be read: its Scan answers why.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
