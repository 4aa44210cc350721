package main

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"
)

// Hand-made histories of one payment of 1000, in the shapes the load produces. Times are
// arbitrary units; never is an answer that was lost.
const never = math.MaxInt64

func op(client int, call, ret int64, in paymentInput, out paymentOutput) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

var (
	create = paymentInput{Kind: opCreate, Key: "k", Amount: 1000}
	read   = paymentInput{Kind: opRead}
)

func refund(key string, amount int64) paymentInput {
	return paymentInput{Kind: opRefund, Key: key, Amount: amount}
}

func created() paymentOutput { return paymentOutput{Known: true, Amount: 1000, Version: 1} }

func seen(refunded, version int64) paymentOutput {
	return paymentOutput{Known: true, Refunded: refunded, Version: version}
}

var (
	ok       = paymentOutput{Known: true}
	rejected = paymentOutput{Known: true, Rejected: true}
	lost     = paymentOutput{}
)

func TestModelAcceptsLinearizableHistories(t *testing.T) {
	checkHistories(t, map[string][]porcupine.Operation{
		// Two racing refunds of 600: one wins, one is rejected; a read overlapping both may
		// see either state, the read after both sees the winner.
		"racing refunds": {
			op(0, 0, 1, create, created()),
			op(1, 2, 6, refund("a", 600), ok),
			op(2, 2, 6, refund("b", 600), rejected),
			op(3, 3, 5, read, seen(0, 1)),
			op(0, 7, 8, read, seen(600, 2)),
		},
		// The create's answer was lost and its retry replays the first answer; a refund's
		// answer was lost, yet a read shows it committed, and its retry replays success.
		"lost answers retried with the same key": {
			op(0, 0, never, create, lost),
			op(0, 2, 3, create, created()),
			op(1, 4, never, refund("a", 300), lost),
			op(2, 5, 6, read, seen(300, 2)),
			op(1, 7, 8, refund("a", 300), ok),
			op(2, 9, 10, read, seen(300, 2)),
		},
		// A lost refund that never committed: no read shows it, and a later refund needs
		// what it would have taken.
		"lost refund that did not happen": {
			op(0, 0, 1, create, created()),
			op(1, 2, never, refund("a", 600), lost),
			op(2, 3, 4, refund("b", 700), ok),
			op(0, 5, 6, read, seen(700, 2)),
		},
	}, porcupine.Ok)
}

func TestModelRejectsNonLinearizableHistories(t *testing.T) {
	checkHistories(t, map[string][]porcupine.Operation{
		// A read after a refund answered ok still shows the payment unrefunded.
		"stale read": {
			op(0, 0, 1, create, created()),
			op(1, 2, 3, refund("a", 300), ok),
			op(0, 4, 5, read, seen(0, 1)),
		},
		// Both racing refunds of 600 succeed: more than the payment.
		"over-refund": {
			op(0, 0, 1, create, created()),
			op(1, 2, 4, refund("a", 600), ok),
			op(2, 2, 4, refund("b", 600), ok),
		},
		// The retry of a refund's key applied it twice.
		"retry applied twice": {
			op(0, 0, 1, create, created()),
			op(1, 2, 3, refund("a", 300), ok),
			op(1, 4, 5, refund("a", 300), ok),
			op(0, 6, 7, read, seen(600, 3)),
		},
		// A read saw a state that never existed: the amount refunded without its version.
		"version skipped": {
			op(0, 0, 1, create, created()),
			op(1, 2, 3, refund("a", 300), ok),
			op(0, 4, 5, read, seen(300, 3)),
		},
		// A read after the create answered cannot find the payment.
		"created payment not found": {
			op(0, 0, 1, create, created()),
			op(0, 2, 3, read, paymentOutput{Known: true, Missing: true}),
		},
		// The create's replay shows a refund: a replay must be the first answer.
		"replay not byte for byte": {
			op(0, 0, 1, create, created()),
			op(1, 2, 3, refund("a", 300), ok),
			op(0, 4, 5, create, paymentOutput{Known: true, Amount: 1000, Refunded: 300, Version: 2}),
		},
	}, porcupine.Illegal)
}

// checkHistories checks each history against the model and wants the result want.
func checkHistories(t *testing.T, histories map[string][]porcupine.Operation, want porcupine.CheckResult) {
	for name, history := range histories {
		t.Run(name, func(t *testing.T) {
			if res := porcupine.CheckOperationsTimeout(paymentModel, history, 0); res != want {
				t.Fatalf("got %s, want %s", res, want)
			}
		})
	}
}

func TestModelPartitionsByPayment(t *testing.T) {
	// Each payment alone is linearizable; mixed into one object they would not be (the
	// second create would replay the first's amount).
	other := paymentInput{Payment: 1, Kind: opCreate, Key: "k2", Amount: 500}
	history := []porcupine.Operation{
		op(0, 0, 1, create, created()),
		op(1, 0, 1, other, paymentOutput{Known: true, Amount: 500, Version: 1}),
	}
	if res := porcupine.CheckOperationsTimeout(paymentModel, history, 0); res != porcupine.Ok {
		t.Fatalf("got %s, want ok", res)
	}
}
