package jobs

import (
	"context"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// CompleteTx completes job in tx, the transaction that records the end of its work. River
// would otherwise mark it completed after Work returns, in a batch a moment later: meanwhile
// the job would look running to anything that reads the queue, after its work was visible.
func CompleteTx[T river.JobArgs](ctx context.Context, tx db.Tx, job *river.Job[T]) error {
	pgxTx, err := tx.PgxTx(ctx)
	if err != nil {
		return err
	}
	_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, pgxTx, job)
	return err
}
