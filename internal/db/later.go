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

// laterQueue is the DBTX behind Tx.Later: it queues statements in a pgx.Batch instead of
// sending them, so the sqlc-generated methods (their SQL and arguments) are reused unchanged.
type laterQueue struct {
	batch pgx.Batch
}

func (q *laterQueue) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	q.batch.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (q *laterQueue) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return nil, errNotDeferrable
}

func (q *laterQueue) QueryRow(context.Context, string, ...any) pgx.Row {
	return errRow{}
}

type errRow struct{}

func (errRow) Scan(...any) error { return errNotDeferrable }

// send runs the queued statements in one round trip and returns the first error.
func (q *laterQueue) send(ctx context.Context, tx pgx.Tx) error {
	if q.batch.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, &q.batch).Close()
}
