package main

import (
	"math"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// exchange is one HTTP request the load made and how it ended.
type exchange struct {
	Call, Return time.Duration // since the run began
	Status       int           // 0 when no answer came (timeout, dropped connection)
	RetryAfter   bool          // the answer carried Retry-After
	Write        bool          // a POST: it asked the database to commit
}

func (e exchange) ok() bool { return e.Status >= 200 && e.Status < 300 }

// history records every exchange, for the status counts and the heal times, and every
// operation on a payment, for the linearizability check. Safe for concurrent use.
type history struct {
	start time.Time

	mu        sync.Mutex
	exchanges []exchange
	ops       []porcupine.Operation
}

func newHistory() *history { return &history{start: time.Now()} }

// now is the time since the run began: one monotonic clock for calls, returns and faults.
func (h *history) now() time.Duration { return time.Since(h.start) }

func (h *history) addExchange(e exchange) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.exchanges = append(h.exchanges, e)
}

// addOp records an operation. One whose answer was lost returns "never" (math.MaxInt64):
// it may have taken effect at any time after its call, which is Porcupine's convention for
// an operation still pending when the history ends.
func (h *history) addOp(client int, in paymentInput, call, ret time.Duration, out paymentOutput) {
	op := porcupine.Operation{ClientId: client, Input: in, Call: int64(call), Output: out, Return: int64(ret)}
	if !out.Known {
		op.Return = math.MaxInt64
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
}

func (h *history) snapshot() ([]exchange, []porcupine.Operation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]exchange(nil), h.exchanges...), append([]porcupine.Operation(nil), h.ops...)
}
