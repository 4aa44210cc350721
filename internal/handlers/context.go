package handlers

import (
	"context"

	"github.com/payments-api/payments-api/internal/contract"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/ratelimit"
)

// requestState is what the middleware learns about a request, for the handlers below it: its
// id, then its operation once findOperation has run, its account once authenticate has, the
// quotas it spent, then its body once readBody has. startRequest
// attaches it to the request's context, once, and the middleware after it fill it in, all
// before the handler runs. One value filled in, rather than a context value per middleware,
// because http.Request.WithContext copies the whole request, and a copy per middleware
// would be a large share of what a read allocates.
type requestState struct {
	id            string
	account       db.Account
	authenticated bool
	body          []byte
	decoded       any                 // the body as the contract decoded and checked it
	operation     *contract.Operation // what findOperation found
	conn          context.Context     // the request's context before its deadline (streamContext)
	// rateLimits are the RateLimit members of the quotas the request spent, for a refusal
	// that Prefer asks for later; rateLimitBuf holds them without an allocation.
	rateLimits   []ratelimit.State
	rateLimitBuf [2]ratelimit.State
	// problem is the type of the problem the request was answered with, and failure the
	// error behind a 5xx (handleError): what its log line and its span say went wrong.
	problem string
	failure error
}

type stateKey struct{}

func withRequestState(ctx context.Context, id string, conn context.Context) context.Context {
	return context.WithValue(ctx, stateKey{}, &requestState{id: id, conn: conn})
}

// stateFrom is the request's state, or an empty one for a context that is not a request's.
func stateFrom(ctx context.Context) *requestState {
	if st, ok := ctx.Value(stateKey{}).(*requestState); ok {
		return st
	}
	return &requestState{}
}

func requestIDFrom(ctx context.Context) string { return stateFrom(ctx).id }

// authenticatedAccount is the account authenticate found for the request, if it ran and did.
func authenticatedAccount(ctx context.Context) (db.Account, bool) {
	st := stateFrom(ctx)
	return st.account, st.authenticated
}

// accountFrom is the authenticated account. Only operations the spec marks as secured reach
// a handler, and those always pass the authenticate middleware first.
func accountFrom(ctx context.Context) db.Account {
	acct, ok := authenticatedAccount(ctx)
	if !ok {
		panic("handlers: no account in context: route is missing from the authenticate middleware")
	}
	return acct
}

// rawBodyFrom is the request body exactly as the client sent it.
func rawBodyFrom(ctx context.Context) []byte { return stateFrom(ctx).body }

// decodedBodyFrom is the JSON body as validateRequests decoded it, which is how an
// idempotency fingerprint takes it; nil for a request without one.
func decodedBodyFrom(ctx context.Context) any { return stateFrom(ctx).decoded }
