package db

import (
	"context"

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
	subscribed WebhookEndpointListSubscribedParams
	answered   bool
	ids        []string
	err        error
}

// SubscribedEndpointsAhead reads ahead the endpoints of the account that an event of each
// of eventTypes would fan out to: a create names every event it may record (a payment
// succeeds or fails, which it learns only later). Tx.SubscribedEndpoints answers from it.
func SubscribedEndpointsAhead(accountID string, eventTypes ...string) []*Ahead {
	reads := make([]*Ahead, len(eventTypes))
	for i, t := range eventTypes {
		reads[i] = &Ahead{subscribed: WebhookEndpointListSubscribedParams{AccountID: accountID, Type: t}}
	}
	return reads
}

// queue adds the read to b, to be answered when b's results are closed.
func (a *Ahead) queue(b *pgx.Batch) {
	b.Queue(webhookEndpointListSubscribed, a.subscribed.AccountID, a.subscribed.Type).Query(func(rows pgx.Rows) error {
		a.ids, a.err = pgx.CollectRows(rows, pgx.RowTo[string])
		a.answered = true
		return a.err
	})
}

// SubscribedEndpoints is WebhookEndpointListSubscribed, answered from the transaction's
// first round trip when the read was sent ahead, and sent now otherwise.
func (tx Tx) SubscribedEndpoints(ctx context.Context, arg WebhookEndpointListSubscribedParams) ([]string, error) {
	for _, a := range tx.conn.ahead {
		if a.subscribed == arg && a.answered {
			return a.ids, a.err
		}
	}
	return tx.WebhookEndpointListSubscribed(ctx, arg)
}
