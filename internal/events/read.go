package events

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
)

// Service reads the account's events.
type Service struct{ pool *pgxpool.Pool }

// NewService reads events from pool.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// Get returns one event of the account.
func (s *Service) Get(ctx context.Context, accountID, id string) (db.Event, error) {
	e, err := db.New(s.pool).EventGetByID(ctx, db.EventGetByIDParams{AccountID: accountID, ID: id})
	if err != nil {
		return db.Event{}, fmt.Errorf("get event %s: %w", id, db.Translate(err))
	}
	return e, nil
}

// ListParams pages the account's events, optionally of one type.
type ListParams struct {
	Limit         int
	StartingAfter *string
	Type          *string
}

// List returns one page, newest first, and whether another page follows.
func (s *Service) List(ctx context.Context, accountID string, p ListParams) ([]db.Event, bool, error) {
	q := db.New(s.pool)
	args := db.EventListParams{AccountID: accountID, RowLimit: int32(p.Limit) + 1}
	if p.StartingAfter != nil {
		cursor, err := q.EventGetByID(ctx, db.EventGetByIDParams{AccountID: accountID, ID: *p.StartingAfter})
		if err := db.NotFoundAsInvalid(err, "starting_after", "no such event"); err != nil {
			return nil, false, err
		}
		args.AfterCreatedAt, args.AfterID = &cursor.CreatedAt, &cursor.ID
	}
	rows, err := list(ctx, q, args, p.Type)
	if err != nil {
		return nil, false, fmt.Errorf("list events: %w", err)
	}
	rows, hasMore := db.Page(rows, p.Limit)
	return rows, hasMore, nil
}

// list reads a page with EventList, or with EventListByType for one type: a query for each,
// so each has an index that leads with its equality columns.
func list(ctx context.Context, q *db.Queries, args db.EventListParams, eventType *string) ([]db.Event, error) {
	if eventType == nil {
		return q.EventList(ctx, args)
	}
	return q.EventListByType(ctx, db.EventListByTypeParams{
		AccountID: args.AccountID, Type: *eventType,
		AfterCreatedAt: args.AfterCreatedAt, AfterID: args.AfterID, RowLimit: args.RowLimit,
	})
}
