package events

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
)

// Service reads the account's events.
type Service struct{ pool *pgxpool.Pool }

// NewService reads events from pool.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// Get returns one event of the account.
func (s *Service) Get(ctx context.Context, accountID, id string) (db.Event, error) {
	e, err := db.Reads(s.pool).EventGetByID(ctx, db.EventGetByIDParams{AccountID: accountID, ID: id})
	if err != nil {
		return db.Event{}, fmt.Errorf("get event %s: %w", id, db.Translate(err))
	}
	return e, nil
}

// ListParams pages the account's events, optionally of one type.
type ListParams struct {
	db.Page
	Type *string
}

// List returns one page, newest first, and whether another page follows.
func (s *Service) List(ctx context.Context, accountID string, p ListParams) ([]db.Event, bool, error) {
	q := db.Reads(s.pool)
	createdAt := func(id string) (time.Time, error) {
		e, err := q.EventGetByID(ctx, db.EventGetByIDParams{AccountID: accountID, ID: id})
		return e.CreatedAt, err
	}
	return db.ListPage(p.Page, "event", createdAt, func(after db.After, rowLimit int32) ([]db.Event, error) {
		// A query for each, so each has an index that leads with its equality columns.
		if p.Type == nil {
			return q.EventList(ctx, db.EventListParams{
				AccountID: accountID, AfterCreatedAt: after.CreatedAt, AfterID: after.ID, RowLimit: rowLimit,
			})
		}
		return q.EventListByType(ctx, db.EventListByTypeParams{
			AccountID: accountID, Type: *p.Type, AfterCreatedAt: after.CreatedAt, AfterID: after.ID, RowLimit: rowLimit,
		})
	})
}
