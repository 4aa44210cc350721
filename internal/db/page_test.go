package db_test

import (
	"errors"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
)

// TestListPage: a page asks for one row more than its limit and cuts it into has_more, and
// starts after the row its cursor names, which must exist.
func TestListPage(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rows := []string{"a", "b", "c"}
	var asked int32
	var after db.After
	read := func(a db.After, rowLimit int32) ([]string, error) {
		after, asked = a, rowLimit
		return rows[:min(int(rowLimit), len(rows))], nil
	}
	found := func(string) (time.Time, error) { return at, nil }

	for _, tt := range []struct {
		limit    int
		want     int
		wantMore bool
	}{{1, 1, true}, {2, 2, true}, {3, 3, false}, {10, 3, false}} {
		got, more, err := db.ListPage(db.Page{Limit: tt.limit}, "row", found, read)
		if err != nil || len(got) != tt.want || more != tt.wantMore || asked != int32(tt.limit)+1 || after != (db.After{}) {
			t.Errorf("limit %d: %v, more %v, %v; asked for %d rows after %v", tt.limit, got, more, err, asked, after)
		}
	}

	cursor := "b"
	if _, _, err := db.ListPage(db.Page{Limit: 1, StartingAfter: &cursor}, "row", found, read); err != nil ||
		after.ID == nil || *after.ID != "b" || after.CreatedAt == nil || !after.CreatedAt.Equal(at) {
		t.Errorf("after a cursor: %v, read after %+v", err, after)
	}

	missing := func(string) (time.Time, error) { return time.Time{}, domain.ErrNotFound }
	_, _, err := db.ListPage(db.Page{Limit: 1, StartingAfter: &cursor}, "row", missing, read)
	var invalid *domain.ValidationError
	if !errors.As(err, &invalid) || invalid.Field != "starting_after" || invalid.Message != "no such row" {
		t.Errorf("a cursor that does not exist: %v, want a validation error for starting_after", err)
	}
}
