package db

import (
	"errors"
	"fmt"

	"github.com/payments-api/payments-api/internal/domain"
)

// Page cuts a list query's result, fetched with limit+1 rows, to limit rows and tells
// whether the extra row, and so another page, was there. Every keyset list asks for one row
// more than the page (RowLimit: limit + 1) so that has_more costs no second query.
func Page[T any](rows []T, limit int) ([]T, bool) {
	if len(rows) > limit {
		return rows[:limit], true
	}
	return rows, false
}

// NotFoundAsInvalid turns a missing row named by a query parameter or a body member (a list's
// starting_after, a refund's payment_id) into a 400 for that field: the request, not the
// resource it was sent to, is what is wrong. Other errors are wrapped; nil stays nil.
func NotFoundAsInvalid(err error, field, message string) error {
	switch {
	case errors.Is(Translate(err), domain.ErrNotFound):
		return &domain.ValidationError{Field: field, Message: message}
	case err != nil:
		return fmt.Errorf("look up %s: %w", field, err)
	}
	return nil
}
