package db_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// key is a payment as payments.Service reads one: its id within its account.
type key struct{ account, id string }

// heldReads reads payments with PaymentGetByIDs through Reads, as payments.Service does, and holds
// its first statement at hold until the test releases it: before the statement when
// holdAfter is false, after it when true. statements lists the keys of every statement sent.
type heldReads struct {
	pool      *pgxpool.Pool
	holdAfter bool
	held      chan struct{} // closed when the first statement reaches the hold
	release   chan struct{}

	mu         sync.Mutex
	statements [][]key
}

func newHeldReads(pool *pgxpool.Pool, holdAfter bool) *heldReads {
	return &heldReads{pool: pool, holdAfter: holdAfter, held: make(chan struct{}), release: make(chan struct{})}
}

func (h *heldReads) coalescer() *db.Coalescer[key, db.Payment] {
	return db.NewCoalescer(h.fetch, func(p db.Payment) key { return key{p.AccountID, p.ID} })
}

func (h *heldReads) fetch(ctx context.Context, keys []key) ([]db.Payment, error) {
	h.mu.Lock()
	h.statements = append(h.statements, keys)
	first := len(h.statements) == 1
	h.mu.Unlock()
	if first && !h.holdAfter {
		close(h.held)
		<-h.release
	}
	rows, err := readPayments(ctx, h.pool, keys)
	if first && h.holdAfter {
		close(h.held)
		<-h.release
	}
	return rows, err
}

// readPayments reads the payments of keys in one statement, as payments.Service reads
// several.
func readPayments(ctx context.Context, pool *pgxpool.Pool, keys []key) ([]db.Payment, error) {
	args := db.PaymentGetByIDsParams{}
	for _, k := range keys {
		args.AccountIds, args.Ids = append(args.AccountIds, k.account), append(args.Ids, k.id)
	}
	return db.Reads(pool).PaymentGetByIDs(ctx, args)
}

// sent is the keys of each statement sent, each statement's in order of account and id (the
// reads' goroutines queue in any order).
func (h *heldReads) sent() [][]key {
	h.mu.Lock()
	defer h.mu.Unlock()
	sent := make([][]key, len(h.statements))
	for i, keys := range h.statements {
		sent[i] = slices.SortedFunc(slices.Values(keys), func(a, b key) int {
			return cmp.Or(strings.Compare(a.account, b.account), strings.Compare(a.id, b.id))
		})
	}
	return sent
}

// read is one Get's answer.
type read struct {
	payment db.Payment
	found   bool
	err     error
}

// startRead runs c.Get(ctx, k) in a goroutine of its own; its answer arrives on the channel.
func startRead(ctx context.Context, c *db.Coalescer[key, db.Payment], k key) <-chan read {
	answer := make(chan read, 1)
	go func() {
		p, found, err := c.Get(ctx, k)
		answer <- read{p, found, err}
	}()
	return answer
}

// waitFor polls until cond holds, or fails t after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// insertPayments inserts payments of 100 usd, each the key's id in the key's account.
func insertPayments(t *testing.T, pool *pgxpool.Pool, keys ...key) {
	t.Helper()
	for _, k := range keys {
		if _, err := pool.Exec(context.Background(), `INSERT INTO accounts (id) VALUES ($1) ON CONFLICT DO NOTHING`, k.account); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(context.Background(), `INSERT INTO payments (id, account_id, amount, currency, status, payment_method)
			VALUES ($1, $2, 100, 'usd', 'succeeded', 'pm_card_visa')`, k.id, k.account); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadsQueuedBehindAStatementShareTheNext holds the first read's statement, queues six
// reads behind it, and releases it: the six go out as one statement, one round trip, which
// asks for a row twice asked once, and each read gets its own answer. A payment of another
// account is not found, in a batch as alone.
func TestReadsQueuedBehindAStatementShareTheNext(t *testing.T) {
	t.Parallel()
	pool, trips := dbtest.NewCountedPool(t)
	a1, a2, a3, b1 := key{"acct_a", "pay_a1"}, key{"acct_a", "pay_a2"}, key{"acct_a", "pay_a3"}, key{"acct_b", "pay_b1"}
	insertPayments(t, pool, a1, a2, a3, b1)
	ctx := context.Background()
	// Prepare the statement, so that the count below is of the reads' round trips alone.
	if _, err := db.New(pool).PaymentGetByIDs(ctx, db.PaymentGetByIDsParams{AccountIds: []string{"acct_a"}, Ids: []string{"pay_a1"}}); err != nil {
		t.Fatal(err)
	}
	trips.Reset()

	h := newHeldReads(pool, false)
	c := h.coalescer()
	first := startRead(ctx, c, a1)
	<-h.held
	queued := []key{
		a2, a3, a2,
		b1,
		{"acct_b", "pay_a1"},   // acct_a's payment, asked for by acct_b
		{"acct_a", "pay_none"}, // no such payment
	}
	answers := make([]<-chan read, len(queued))
	for i, k := range queued {
		answers[i] = startRead(ctx, c, k)
	}
	waitFor(t, "six reads queued", func() bool { return c.Waiting() == len(queued) })
	close(h.release)

	if r := <-first; r.err != nil || !r.found || r.payment.ID != a1.id {
		t.Errorf("the first read: %+v", r)
	}
	for i, k := range queued {
		r := <-answers[i]
		wantFound := k != key{"acct_b", "pay_a1"} && k.id != "pay_none"
		if r.err != nil || r.found != wantFound || (wantFound && (r.payment.ID != k.id || r.payment.AccountID != k.account)) {
			t.Errorf("read of %v: found %t, payment %s of %s, err %v; want found %t", k, r.found, r.payment.ID, r.payment.AccountID, r.err, wantFound)
		}
	}
	want := [][]key{{a1}, {a2, a3, {"acct_a", "pay_none"}, {"acct_b", "pay_a1"}, b1}}
	if got := h.sent(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("statements sent:\n got %v\nwant %v", got, want)
	}
	if n := trips.Count(); n != 2 {
		t.Errorf("seven reads took %d round trips, want 2", n)
	}
}

// TestACoalescedReadSeesWritesCommittedBeforeIt: a read that arrives while a statement for
// the same payment is under way, after a write to it committed, is not answered by that
// statement, which began before the write: it waits for the next, and sees the write.
func TestACoalescedReadSeesWritesCommittedBeforeIt(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.NewPool(t)
	p := key{"acct_a", "pay_a1"}
	insertPayments(t, pool, p)
	ctx := context.Background()

	h := newHeldReads(pool, true)
	c := h.coalescer()
	before := startRead(ctx, c, p)
	<-h.held // its statement has read version 1
	if _, err := pool.Exec(ctx, `UPDATE payments SET version = 2 WHERE id = $1`, p.id); err != nil {
		t.Fatal(err)
	}
	after := startRead(ctx, c, p)
	waitFor(t, "the second read queued", func() bool { return c.Waiting() == 1 })
	close(h.release)

	if r := <-before; r.err != nil || r.payment.Version != 1 {
		t.Errorf("the read before the write: version %d, err %v; want 1", r.payment.Version, r.err)
	}
	if r := <-after; r.err != nil || r.payment.Version != 2 {
		t.Errorf("the read after the write: version %d, err %v; want 2", r.payment.Version, r.err)
	}
}

// TestAReadThatStopsWaitingLeavesTheQueue: a queued read whose context ends returns its
// context's error at once and leaves the queue. The statement it would have shared still
// answers the read that stays, without its row; when no read stays, no statement follows the
// one in flight, and the next read is sent alone at once. Either way the read after the first
// is the only one sent.
func TestAReadThatStopsWaitingLeavesTheQueue(t *testing.T) {
	t.Parallel()
	a1, a2, a3 := key{"acct_a", "pay_a1"}, key{"acct_a", "pay_a2"}, key{"acct_a", "pay_a3"}
	for _, another := range []bool{true, false} {
		t.Run(fmt.Sprintf("another read queued: %t", another), func(t *testing.T) {
			t.Parallel()
			pool, _ := dbtest.NewPool(t)
			insertPayments(t, pool, a1, a2, a3)
			ctx := context.Background()

			h := newHeldReads(pool, false)
			c := h.coalescer()
			first := startRead(ctx, c, a1)
			<-h.held
			giveUp, cancel := context.WithCancel(ctx)
			gaveUp := startRead(giveUp, c, a2)
			var stays <-chan read
			queued := 1
			if another {
				stays, queued = startRead(ctx, c, a3), 2
			}
			waitFor(t, "the reads queued", func() bool { return c.Waiting() == queued })
			cancel()
			select {
			case r := <-gaveUp:
				if !errors.Is(r.err, context.Canceled) {
					t.Errorf("the read whose context ended: %+v, want context.Canceled", r)
				}
			case <-time.After(10 * time.Second):
				t.Error("the read whose context ended still waits for the statement")
			}
			if n := c.Waiting(); n != queued-1 {
				t.Errorf("%d reads queued after one of %d gave up, want %d", n, queued, queued-1)
			}
			close(h.release)
			if r := <-first; r.err != nil || !r.found {
				t.Errorf("the read held first: %+v", r)
			}
			if another {
				if r := <-stays; r.err != nil || !r.found {
					t.Errorf("the read that waited on: %+v", r)
				}
			} else if _, found, err := c.Get(ctx, a3); err != nil || !found {
				t.Errorf("the next read: found %t, err %v", found, err)
			}
			if got, want := h.sent(), [][]key{{a1}, {a3}}; !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("statements sent:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// TestACoalescedReadWaitsOutAFailover: the statement a read shares waits out a failover for
// as long as the read would alone (db.WithFailoverWait), though it runs under a context of
// its own. The read held first has no wait, and fails as the database is unavailable.
func TestACoalescedReadWaitsOutAFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy, pool := poolBehindProxy(t, dbtest.NewURL(t))
	a1, a2 := key{"acct_a", "pay_a1"}, key{"acct_a", "pay_a2"}
	insertPayments(t, pool, a1, a2)

	h := newHeldReads(pool, false)
	c := h.coalescer()
	first := startRead(ctx, c, a1)
	<-h.held
	queued := startRead(db.WithFailoverWait(ctx, time.Minute), c, a2)
	waitFor(t, "a read queued", func() bool { return c.Waiting() == 1 })
	proxy.Refuse()
	close(h.release)
	if r := <-first; !db.IsUnavailable(r.err) {
		t.Errorf("the read without a failover wait: %+v, want an unavailable error", r)
	}
	proxy.Refuse() // counts the refusals from here on
	proxy.WaitRefused(3)
	proxy.Resume()
	if r := <-queued; r.err != nil || !r.found || r.payment.ID != a2.id {
		t.Errorf("the queued read, once the database is back: %+v", r)
	}
}

// TestAReadThatPanicsLeavesTheCoalescerServing: a read whose statement panics (a bug in a
// scan, say) fails as a panic in a request's own goroutine fails that request, and the reads
// after it are served as before. Alone, the panic reaches the caller (where echo's recovery
// answers 500), and the next read still finds no statement in flight. In a shared statement,
// which runs on a goroutine of its own that no request's recovery reaches, the panic is each
// of its reads' error, and the server goes on.
func TestAReadThatPanicsLeavesTheCoalescerServing(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.NewPool(t)
	a1, a2 := key{"acct_a", "pay_a1"}, key{"acct_a", "pay_a2"}
	insertPayments(t, pool, a1, a2)
	bad := key{"acct_a", "pay_bug"}
	held, release := make(chan struct{}), make(chan struct{})
	var holdOnce sync.Once
	c := db.NewCoalescer(func(ctx context.Context, keys []key) ([]db.Payment, error) {
		if slices.Contains(keys, bad) {
			panic("a bug in a read")
		}
		if slices.Contains(keys, a1) { // a1's first statement waits for the test
			holdOnce.Do(func() { close(held); <-release })
		}
		return readPayments(ctx, pool, keys)
	}, func(p db.Payment) key { return key{p.AccountID, p.ID} })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	func() {
		defer func() {
			if recover() == nil {
				t.Error("the read that panicked alone returned")
			}
		}()
		_, _, _ = c.Get(ctx, bad)
	}()
	if _, found, err := c.Get(ctx, a2); err != nil || !found {
		t.Fatalf("a read after a panic alone: found %t, err %v", found, err)
	}

	first := startRead(ctx, c, a1)
	<-held
	failed, after := startRead(ctx, c, bad), startRead(ctx, c, a2)
	waitFor(t, "two reads queued", func() bool { return c.Waiting() == 2 })
	close(release)
	if r := <-first; r.err != nil || !r.found {
		t.Errorf("the read held first: %+v", r)
	}
	for _, r := range []read{<-failed, <-after} {
		if r.err == nil || !strings.Contains(r.err.Error(), "a bug in a read") {
			t.Errorf("a read that shared the statement that panicked: %+v, want the panic as its error", r)
		}
	}
	if _, found, err := c.Get(ctx, a2); err != nil || !found {
		t.Errorf("a read after a panic in a shared statement: found %t, err %v", found, err)
	}
}

// TestCloseEndsASharedStatement: a shared statement runs under a context no request's
// reaches, so a database that stops answering would keep it, and the connection it holds,
// up to the latest deadline of its reads. Close ends it. The test holds the first statement
// until a read without a deadline queues behind it, then lets it go; the shared statement
// that follows waits for its context alone.
func TestCloseEndsASharedStatement(t *testing.T) {
	t.Parallel()
	releaseFirst, sharedSent := make(chan struct{}), make(chan struct{})
	var statements atomic.Int32
	c := db.NewCoalescer(func(ctx context.Context, keys []string) ([]string, error) {
		if statements.Add(1) == 1 {
			<-releaseFirst
			return keys, nil
		}
		close(sharedSent)
		<-ctx.Done() // a database that does not answer
		return nil, ctx.Err()
	}, func(s string) string { return s })

	go func() { _, _, _ = c.Get(context.Background(), "first") }()
	waitFor(t, "the first read's statement in flight", func() bool { return statements.Load() == 1 })
	shared := make(chan error, 1)
	go func() { _, _, err := c.Get(context.Background(), "shared"); shared <- err }()
	waitFor(t, "the second read queued", func() bool { return c.Waiting() == 1 })
	close(releaseFirst)
	<-sharedSent

	c.Close()
	select {
	case err := <-shared:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the shared read after Close: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the shared statement")
	}
}
