package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/payments-api/payments-api/internal/domain"
)

// Translate turns the pgx errors that have a domain meaning into domain errors, so callers
// never import pgx to tell "no such row" from a broken connection. Other errors pass through.
func Translate(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.ErrNotFound
	}
	return err
}

// IsUnavailable reports whether err means the database could not be reached or did not
// answer in time, rather than that it refused the request: the server is down, restarting or
// frozen, the network is, the pool waited out the deadline, a statement was cut off by
// statement_timeout, or a failover left the connection on a node that is now read-only.
// Such a failure is temporary and says nothing about the request, so it is worth retrying
// (a 503, not a 500). An error the server sent for the request itself (a constraint, bad
// credentials) is not.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableSQLState(pgErr.Code)
	}
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.As(err, &connectErr) ||
		errors.As(err, &netErr) ||
		pgconn.Timeout(err) ||
		errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) // the server hung up mid-message
}

// IsRolledBack reports whether PostgreSQL rolled the transaction back to settle a conflict
// with another one: a deadlock (40P01) or a serialization failure (40001). Nothing was wrong
// with the request and nothing of its transaction was kept, so it is worth retrying too.
func IsRolledBack(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) &&
		(pgErr.Code == pgerrcode.DeadlockDetected || pgErr.Code == pgerrcode.SerializationFailure)
}

// IsAccountDeleted reports whether err is a write refused because its account no longer
// exists: a foreign key to accounts (each is named <table>_account_id_fkey) found no row, or
// a row the write waited for went with its account (ErrAccountDeleted). DELETE /account can
// remove an account while one of its requests runs, since a request's rows go with its
// COMMIT, after the deletion has committed.
func IsAccountDeleted(err error) bool {
	var pgErr *pgconn.PgError
	return errors.Is(err, ErrAccountDeleted) || errors.As(err, &pgErr) &&
		pgErr.Code == pgerrcode.ForeignKeyViolation && strings.HasSuffix(pgErr.ConstraintName, "_account_id_fkey")
}

// ErrAccountDeleted is a row a request waited for, deleted with its account meanwhile
// (NotFoundOrAccountDeleted).
var ErrAccountDeleted = errors.New("the account was deleted")

// NotFoundOrAccountDeleted is err, from a locking read of one of accountID's rows, unless
// the read found no row because DELETE /account removed it while the read waited for its
// lock: then ErrAccountDeleted, so the request answers as it would had its COMMIT met the
// deletion (IsAccountDeleted), and as its retry, whose key went with the account, will.
func NotFoundOrAccountDeleted(ctx context.Context, q *Queries, accountID string, err error) error {
	if !errors.Is(Translate(err), domain.ErrNotFound) {
		return err
	}
	exists, existsErr := q.AccountExists(ctx, accountID)
	switch {
	case existsErr != nil:
		return fmt.Errorf("look up account %s: %w", accountID, existsErr)
	case !exists:
		return ErrAccountDeleted
	}
	return err
}

// unavailableSQLState: the connection broke (class 08), the server is out of connections
// (53300), shutting down or starting (57P01-57P03), the statement outlived statement_timeout
// (57014), or the server refused a write as read-only (25006). The server never asks for a
// read-only transaction, so a 25006 means the node it reached is no longer the primary: a
// failover demoted it, or the connection reached a standby. The write is not done, and once
// the pool has moved to the new primary (dropDemoted) a retry succeeds.
func unavailableSQLState(code string) bool {
	switch {
	case pgerrcode.IsConnectionException(code):
		return true
	case code == pgerrcode.TooManyConnections, code == pgerrcode.AdminShutdown,
		code == pgerrcode.CrashShutdown, code == pgerrcode.CannotConnectNow,
		code == pgerrcode.QueryCanceled, code == pgerrcode.ReadOnlySQLTransaction:
		return true
	}
	return false
}
