package db

import (
	"errors"
	"fmt"
	"time"

	"github.com/payments-api/payments-api/internal/domain"
)

// Page asks for one page of a list, newest first: at most Limit rows, after the row named by
// StartingAfter (the last row of the previous page), or from the newest row when it is nil.
type Page struct {
	Limit         int
	StartingAfter *string
}

// After is the keyset a page starts after: the (created_at, id) of the row StartingAfter names,
// or both nil for the first page. Every list query takes it as sqlc.narg('after_created_at')
// and sqlc.narg('after_id'), so a page's scan starts at the cursor in the list's index.
type After struct {
	CreatedAt *time.Time
	ID        *string
}

// ListPage reads one page of a keyset list, as every list of the API pages. createdAt looks
// up the row StartingAfter names; one that does not exist (in the account, or wherever the
// list is) answers 400 "no such <noun>" for starting_after. read fetches up to rowLimit rows
// after the keyset: one more than the page, so that has_more costs no second query.
func ListPage[T any](p Page, noun string, createdAt func(id string) (time.Time, error), read func(after After, rowLimit int32) ([]T, error)) (rows []T, hasMore bool, err error) {
	var after After
	if p.StartingAfter != nil {
		at, err := createdAt(*p.StartingAfter)
		if err := NotFoundAsInvalid(err, "starting_after", "no such "+noun); err != nil {
			return nil, false, err
		}
		after = After{CreatedAt: &at, ID: p.StartingAfter}
	}
	rows, err = read(after, int32(p.Limit)+1)
	if err != nil {
		return nil, false, fmt.Errorf("read a page (%s): %w", noun, err)
	}
	if len(rows) > p.Limit {
		return rows[:p.Limit], true, nil
	}
	return rows, false, nil
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
