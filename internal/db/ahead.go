package db

import (
	"context"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Ahead is a read a transaction sends before it is asked for: with the transaction's first
// statement, in the round trip that begins it (InTx). It is for a read whose answer a
// request needs later but can name before it begins, so that it costs no round trip of its
// own. Under READ COMMITTED each statement reads what had committed when it started, so a
// read sent ahead sees the database as of the transaction's start, not as of its use: what
// reads it must allow for what commits in between.
//
// Two reads have a use for it today: a key's row, read once its lock is answered
// (IdempotencyKeyAhead), and the webhook endpoints an event fans out to
// (SubscribedEndpointsAhead), which a create would otherwise look up between its claim and
// its commit. A create's charge comes in between: WebhookDeliveryInsertMany skips an
// endpoint deleted meanwhile.
type Ahead interface {
	// queue adds the read to b, to be answered when b's results are closed.
	queue(b *pgx.Batch)
}

// errNotAnswered is what a read sent ahead answers before the round trip that carries it.
var errNotAnswered = errors.New("db: a read sent ahead is answered with the transaction's first statement")

// aheadRows is a read sent ahead and its answer: the rows of sql with args, as T.
type aheadRows[T any] struct {
	sql      string
	args     []any
	answered bool
	rows     []T
	err      error
}

func (a *aheadRows[T]) queue(b *pgx.Batch) {
	b.Queue(a.sql, a.args...).Query(func(rows pgx.Rows) error {
		a.rows, a.err = pgx.CollectRows(rows, pgx.RowToStructByPos[T])
		a.answered = true
		return a.err
	})
}

// KeyAhead reads an idempotency key's row ahead (IdempotencyKeyGet).
type KeyAhead struct {
	aheadRows[IdempotencyKeyGetRow]
}

// IdempotencyKeyAhead reads the key's row in the round trip of the transaction's first
// statement, after it: the key's lock (IdempotencyKeyLock), so what it reads is what had
// committed once the lock was answered.
func IdempotencyKeyAhead(arg IdempotencyKeyGetParams) *KeyAhead {
	return &KeyAhead{aheadRows[IdempotencyKeyGetRow]{sql: idempotencyKeyGet, args: []any{arg.AccountID, arg.Operation, arg.Key}}}
}

// Row is the key's row and whether it has one. It is an error to ask before the
// transaction's first statement has been answered.
func (a *KeyAhead) Row() (IdempotencyKeyGetRow, bool, error) {
	switch {
	case a.err != nil:
		return IdempotencyKeyGetRow{}, false, a.err
	case !a.answered:
		return IdempotencyKeyGetRow{}, false, errNotAnswered
	case len(a.rows) == 0:
		return IdempotencyKeyGetRow{}, false, nil
	}
	return a.rows[0], true, nil
}

// EndpointsAhead reads ahead the webhook endpoints an event may fan out to
// (WebhookEndpointListSubscribedAny).
type EndpointsAhead struct {
	aheadRows[WebhookEndpointListSubscribedAnyRow]
	subscribed WebhookEndpointListSubscribedAnyParams
}

// SubscribedEndpointsAhead reads ahead, in one statement, the endpoints of the account that
// an event of any of eventTypes would fan out to: a create names every event it may record
// (a payment succeeds or fails, which it learns only later). Tx.SubscribedEndpoints answers
// from it for each of eventTypes.
func SubscribedEndpointsAhead(accountID string, eventTypes ...string) *EndpointsAhead {
	return &EndpointsAhead{
		aheadRows:  aheadRows[WebhookEndpointListSubscribedAnyRow]{sql: webhookEndpointListSubscribedAny, args: []any{accountID, eventTypes}},
		subscribed: WebhookEndpointListSubscribedAnyParams{AccountID: accountID, Types: eventTypes},
	}
}

// covers reports whether the read was answered and holds what arg asks for.
func (a *EndpointsAhead) covers(arg WebhookEndpointListSubscribedParams) bool {
	return a.answered && a.subscribed.AccountID == arg.AccountID && slices.Contains(a.subscribed.Types, arg.Type)
}

// subscribedTo is what WebhookEndpointListSubscribed answers for eventType: the endpoints
// read that take eventType or '*', in the read's order (by id).
func (a *EndpointsAhead) subscribedTo(eventType string) []string {
	var ids []string
	for _, e := range a.rows {
		if slices.Contains(e.EnabledEvents, eventType) || slices.Contains(e.EnabledEvents, "*") {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// SubscribedEndpoints is WebhookEndpointListSubscribed, answered from the transaction's
// first round trip when the read was sent ahead, and sent now otherwise.
func (tx Tx) SubscribedEndpoints(ctx context.Context, arg WebhookEndpointListSubscribedParams) ([]string, error) {
	for _, a := range tx.conn.ahead {
		if a, ok := a.(*EndpointsAhead); ok && a.covers(arg) {
			return a.subscribedTo(arg.Type), a.err
		}
	}
	return tx.WebhookEndpointListSubscribed(ctx, arg)
}
