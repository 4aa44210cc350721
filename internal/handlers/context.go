package handlers

import (
	"context"

	"github.com/payments-api/payments-api/internal/db"
)

// Values the middleware attaches to a request's context for the handlers below it.
type contextKey int

const (
	requestIDKey contextKey = iota
	accountKey
	rawBodyKey
)

func withRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey, id)
}

func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

func withAccount(ctx context.Context, acct db.Account) context.Context {
	return context.WithValue(ctx, accountKey, acct)
}

// accountFrom is the authenticated account. Only operations the spec marks as secured reach
// a handler, and those always pass the authenticate middleware first.
func accountFrom(ctx context.Context) db.Account {
	acct, ok := ctx.Value(accountKey).(db.Account)
	if !ok {
		panic("handlers: no account in context: route is missing from the authenticate middleware")
	}
	return acct
}

func withRawBody(ctx context.Context, body []byte) context.Context {
	return context.WithValue(ctx, rawBodyKey, body)
}

// rawBodyFrom is the request body exactly as the client sent it (for idempotency fingerprints).
func rawBodyFrom(ctx context.Context) []byte {
	body, _ := ctx.Value(rawBodyKey).([]byte)
	return body
}
