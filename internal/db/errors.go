package db

import (
	"context"
	"errors"
	"io"
	"net"

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
// frozen, the network is, the pool waited out the deadline, or a statement was cut off by
// statement_timeout. Such a failure is temporary and says nothing about the request, so it
// is worth retrying (a 503, not a 500). An error the server sent for the request itself
// (a constraint, bad credentials) is not.
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

// unavailableSQLState: the connection broke (class 08), the server is out of connections
// (53300), shutting down or starting (57P01-57P03), or the statement outlived statement_timeout
// (57014).
func unavailableSQLState(code string) bool {
	switch {
	case pgerrcode.IsConnectionException(code):
		return true
	case code == pgerrcode.TooManyConnections, code == pgerrcode.AdminShutdown,
		code == pgerrcode.CrashShutdown, code == pgerrcode.CannotConnectNow,
		code == pgerrcode.QueryCanceled:
		return true
	}
	return false
}
