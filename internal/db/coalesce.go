package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payments-api/payments-api/internal/trace"
)

// Coalescer reads rows by key, one statement at a time, and sends the reads that arrive
// while a statement is in flight together, as the next statement. A read that finds none in
// flight is sent at once, alone, so an idle server answers as soon as one without it would.
// Under load the reads that queue behind a statement share one: the database parses, plans,
// runs and answers it once for all their rows, and the server sends and receives it once. A
// read then costs both sides less the busier they are, and the batches grow with the load
// (Martin Thompson's "smart batching"; a GET /payments/{id} is the read this server serves
// most).
//
// A batch is sent after each of its reads arrived, so each read sees every write committed
// before it arrived, as a statement of its own would. Coalescing never answers a read from a
// statement that was already under way, nor from a copy.
//
// A batch serves several requests, so it runs under a context of its own: it carries none of
// their values (their traces, their spans) but the failover wait (WithFailoverWait), and ends
// at the latest of their deadlines, waiting out a failover as long as the longest of their
// waits. A read whose context ends stops waiting, and leaves the queue if its statement has
// not been sent; the batch goes on for the others. A statement that panics fails its reads
// and leaves the Coalescer serving. Close ends the shared statements, for a process that is
// about to close its pool and would otherwise wait for them.
type Coalescer[K comparable, V any] struct {
	fetch func(ctx context.Context, keys []K) ([]V, error) // the rows found of keys, in any order
	key   func(V) K                                        // the key a row answers
	// closing is the context every batch runs under; Close cancels it.
	closing context.Context
	close   context.CancelFunc

	mu       sync.Mutex
	inFlight bool
	waiting  []*coalescedRead[K, V]
}

// coalescedRead is a read waiting for the next statement.
type coalescedRead[K comparable, V any] struct {
	key          K
	deadline     time.Time     // zero: none
	failoverWait time.Duration // WithFailoverWait's, or zero
	done         chan struct{}
	value        V
	found        bool
	err          error
}

// NewCoalescer reads with fetch, which returns the rows it finds of the keys it is given, in
// any order; key says which key a row answers.
func NewCoalescer[K comparable, V any](fetch func(context.Context, []K) ([]V, error), key func(V) K) *Coalescer[K, V] {
	closing, close := context.WithCancel(context.Background())
	return &Coalescer[K, V]{fetch: fetch, key: key, closing: closing, close: close}
}

// Close cancels the shared statements in flight and any sent later: no request's context
// reaches them, so at shutdown, with the requests stopped, nothing else would end one that a
// stalled database keeps waiting (up to the latest deadline of its reads).
func (c *Coalescer[K, V]) Close() { c.close() }

// Get returns the row of k; found is false when there is none.
func (c *Coalescer[K, V]) Get(ctx context.Context, k K) (v V, found bool, err error) {
	c.mu.Lock()
	if !c.inFlight {
		c.inFlight = true
		c.mu.Unlock()
		// Whatever becomes of the statement, a panic too, the reads queued behind it go next.
		defer c.next()
		// Alone, under the caller's context: the statement is part of the caller's trace.
		rows, err := c.fetch(ctx, []K{k})
		if err != nil || len(rows) == 0 {
			return v, false, err
		}
		return rows[0], true, nil
	}
	r := &coalescedRead[K, V]{key: k, done: make(chan struct{})}
	r.deadline, _ = ctx.Deadline()
	r.failoverWait, _ = ctx.Value(failoverWaitKey{}).(time.Duration)
	c.waiting = append(c.waiting, r)
	c.mu.Unlock()
	// The wait and the shared statement are one phase of the request: "coalesce".
	defer trace.Start(ctx, "coalesce").End()
	select {
	case <-r.done:
		return r.value, r.found, r.err
	case <-ctx.Done():
		// A read that gave up before its statement was sent leaves the queue: nobody waits
		// for its row, and an overloaded server should not read rows for requests that
		// timed out.
		c.mu.Lock()
		c.waiting = slices.DeleteFunc(c.waiting, func(w *coalescedRead[K, V]) bool { return w == r })
		c.mu.Unlock()
		return v, false, ctx.Err()
	}
}

// next is called as a statement returns. When reads have queued behind it, they go out as the
// next statement, sent by a goroutine of its own so that the caller answers its own request
// now; otherwise no statement is in flight any more.
func (c *Coalescer[K, V]) next() {
	if batch := c.takeWaiting(); batch != nil {
		go c.sendBatches(batch)
	}
}

// takeWaiting returns the reads waiting, or nil and marks no statement in flight.
func (c *Coalescer[K, V]) takeWaiting() []*coalescedRead[K, V] {
	c.mu.Lock()
	defer c.mu.Unlock()
	batch := c.waiting
	c.waiting = nil
	if len(batch) == 0 { // none queued, or all that did gave up
		c.inFlight = false
		return nil
	}
	return batch
}

// sendBatches sends batch, then each batch that queued behind it, until none has.
func (c *Coalescer[K, V]) sendBatches(batch []*coalescedRead[K, V]) {
	for batch != nil {
		c.send(batch)
		batch = c.takeWaiting()
	}
}

// send reads batch's keys in one statement and answers each of its reads.
func (c *Coalescer[K, V]) send(batch []*coalescedRead[K, V]) {
	ctx, cancel := batchContext(c.closing, batch)
	defer cancel()
	keys := make([]K, 0, len(batch))
	asked := make(map[K]bool, len(batch))
	for _, r := range batch {
		if !asked[r.key] { // two requests for one row ask for it once
			asked[r.key] = true
			keys = append(keys, r.key)
		}
	}
	rows, err := c.fetchShared(ctx, keys)
	found := make(map[K]V, len(rows))
	for _, v := range rows {
		found[c.key(v)] = v
	}
	for _, r := range batch {
		r.value, r.found = found[r.key]
		r.err = err
		close(r.done)
	}
}

// fetchShared is fetch for a shared statement, with a panic turned into its reads' error: it
// runs on a goroutine of its own, which no request's recovery reaches, so a bug that panics
// would otherwise end the process where alone it fails one request.
func (c *Coalescer[K, V]) fetchShared(ctx context.Context, keys []K) (rows []V, err error) {
	defer func() {
		if p := recover(); p != nil {
			rows, err = nil, fmt.Errorf("coalesced read: panic: %v", p)
		}
	}()
	return c.fetch(ctx, keys)
}

// batchContext ends at the latest deadline of the batch's reads, or never when one of them
// has none (unless closing ends first), and waits out a failover as long as the longest of
// their waits: no read still waiting is cut short by another's.
func batchContext[K comparable, V any](closing context.Context, batch []*coalescedRead[K, V]) (context.Context, context.CancelFunc) {
	var latest time.Time
	noDeadline := false
	var wait time.Duration
	for _, r := range batch {
		noDeadline = noDeadline || r.deadline.IsZero()
		if r.deadline.After(latest) {
			latest = r.deadline
		}
		wait = max(wait, r.failoverWait)
	}
	ctx := WithFailoverWait(closing, wait)
	if noDeadline {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, latest)
}

// OneRow is the answer of a query of one row (sqlc's :one) as a Coalescer's fetch returns
// rows: no rows when there is none. A fetch given a single key can then run a statement of
// that key alone, which PostgreSQL plans for less than one of many.
func OneRow[V any](v V, err error) ([]V, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []V{v}, nil
}
