package db

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PlannedPerRun wraps d so that each statement sent through it carries its values in its SQL
// (pgx's simple protocol) and is planned for them every time it runs. The server's
// connections otherwise plan a statement once, for all its values (see Open): right for the
// lookups, whose generic plans are tested, wrong for the retention sweeps, which are no
// lookup. A batch DELETE of "the oldest expired rows" planned once while its tables were
// empty kept a hash join over each whole table; each sweep's tests count such scans. A sweep
// runs a few statements a minute, so planning each one costs nothing that matters.
func PlannedPerRun(d DBTX) DBTX { return plannedPerRun{d} }

type plannedPerRun struct{ d DBTX }

func (p plannedPerRun) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return p.d.Exec(ctx, sql, perRun(args)...)
}

func (p plannedPerRun) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return p.d.Query(ctx, sql, perRun(args)...)
}

func (p plannedPerRun) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return p.d.QueryRow(ctx, sql, perRun(args)...)
}

// perRun puts pgx's per-query execution mode first, where pgx looks for it.
func perRun(args []any) []any {
	return append([]any{pgx.QueryExecModeSimpleProtocol}, args...)
}
