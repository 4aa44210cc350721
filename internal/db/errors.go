package db

import (
	"errors"

	"github.com/jackc/pgx/v5"
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
