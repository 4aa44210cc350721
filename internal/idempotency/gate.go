package idempotency

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
)

// Gate bounds how many operations of one kind run at once in this process, below the pool's
// size, for an operation whose transaction stays open across a slow call: a payment's charge
// runs inside the transaction that claimed its key, so that the claim and the payment commit
// together, and while the processor takes its time (PROCESSOR_LATENCY, pm_card_slow) the
// transaction holds a pooled connection doing nothing. Without a bound, a burst of slow
// charges would take every connection, and every other request, of every account, would wait
// behind them for one: a GET, a refund, even the 409 a duplicate key is promised at once.
// With it, the connections Gate leaves out of its slots stay for them, and the charges beyond
// its slots wait for one before they begin, holding nothing.
type Gate struct {
	slots chan struct{}
}

// NewGate is a gate for the operations that share pool, leaving a quarter of its connections
// (at least two, where it has three or more) to the rest.
func NewGate(pool *pgxpool.Pool) *Gate {
	size := int(pool.Config().MaxConns)
	return &Gate{slots: make(chan struct{}, max(1, size-max(2, size/4)))}
}

// promptWait is how long Enter waits for a turn before it asks whether the request's key is
// in flight: the 409 of a duplicate stays prompt.
const promptWait = 50 * time.Millisecond

// Size is how many operations g lets run at once.
func (g *Gate) Size() int { return cap(g.slots) }

// Enter waits for one of g's slots for req, and returns the function that gives it back. A
// request that finds no slot free within promptWait asks whether its key is in flight
// (IdempotencyKeyInFlight): a duplicate of a request holding a slot would otherwise wait for
// that request to end and get its replay, where the contract answers 409 at once. An error
// is domain.ErrIdempotencyKeyInUse, or the request's context ending while it waits.
func (s *Store) Enter(ctx context.Context, g *Gate, req Request) (leave func(), err error) {
	leave = func() { <-g.slots }
	select {
	case g.slots <- struct{}{}:
		return leave, nil
	default:
	}
	// Every slot is taken. Quick charges give their turns back within milliseconds, so a
	// request asks about its key only when none came round for promptWait: under load alone,
	// the question would be one more statement for every request, on a database already busy.
	wait := time.NewTimer(promptWait)
	defer wait.Stop()
	select {
	case g.slots <- struct{}{}:
		return leave, nil
	case <-wait.C:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for a slot to run %s: %w", req.Operation, ctx.Err())
	}
	inFlight, err := db.Reads(s.pool).IdempotencyKeyInFlight(ctx, db.IdempotencyKeyInFlightParams{
		LockKey: lockKey(req), AccountID: req.AccountID, Operation: req.Operation, Key: req.Key,
	})
	if err != nil {
		return nil, fmt.Errorf("ask whether the idempotency key is in flight: %w", db.Translate(err))
	}
	// A key whose use committed is not in flight: its retry waits for a turn like any
	// request, and is replayed then.
	if inFlight {
		s.observe(ctx, req.Operation, Response{}, domain.ErrIdempotencyKeyInUse)
		return nil, domain.ErrIdempotencyKeyInUse
	}
	select {
	case g.slots <- struct{}{}:
		return leave, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for a slot to run %s: %w", req.Operation, ctx.Err())
	}
}
