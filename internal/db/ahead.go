package db

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Ahead is a read a transaction sends before it is asked for: with the transaction's first
// statement, in the round trip that begins it (InTx). It is for a read whose answer a
// request needs later but can name before it begins, so that it costs no round trip of its
// own. Under READ COMMITTED each statement reads what had committed when it started, so a
// read sent with the first statement sees what it would have seen sent alone a moment later.
//
// One read has a use for it today: the webhook endpoints an event fans out to
// (SubscribedEndpointsAhead), which a create would otherwise look up between its claim and
// its commit.
type Ahead struct {
	subscribed WebhookEndpointListSubscribedAnyParams
	answered   bool
	endpoints  []WebhookEndpointListSubscribedAnyRow
	err        error
}

// SubscribedEndpointsAhead reads ahead, in one statement, the endpoints of the account that
// an event of any of eventTypes would fan out to: a create names every event it may record
// (a payment succeeds or fails, which it learns only later). Tx.SubscribedEndpoints answers
// from it for each of eventTypes.
func SubscribedEndpointsAhead(accountID string, eventTypes ...string) *Ahead {
	return &Ahead{subscribed: WebhookEndpointListSubscribedAnyParams{AccountID: accountID, Types: eventTypes}}
}

// queue adds the read to b, to be answered when b's results are closed.
func (a *Ahead) queue(b *pgx.Batch) {
	b.Queue(webhookEndpointListSubscribedAny, a.subscribed.AccountID, a.subscribed.Types).Query(func(rows pgx.Rows) error {
		a.endpoints, a.err = pgx.CollectRows(rows, pgx.RowToStructByPos[WebhookEndpointListSubscribedAnyRow])
		a.answered = true
		return a.err
	})
}

// covers reports whether the read was answered and holds what arg asks for.
func (a *Ahead) covers(arg WebhookEndpointListSubscribedParams) bool {
	return a.answered && a.subscribed.AccountID == arg.AccountID && slices.Contains(a.subscribed.Types, arg.Type)
}

// subscribedTo is what WebhookEndpointListSubscribed answers for eventType: the endpoints
// read that take eventType or '*', in the read's order (by id).
func (a *Ahead) subscribedTo(eventType string) []string {
	var ids []string
	for _, e := range a.endpoints {
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
		if a.covers(arg) {
			return a.subscribedTo(arg.Type), a.err
		}
	}
	return tx.WebhookEndpointListSubscribed(ctx, arg)
}
