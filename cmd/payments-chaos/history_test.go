package main

import (
	"math"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestAKeyedOperationIsRecordedOnce: the attempts of one idempotency key are one operation,
// from the first attempt's call to the answer that settled it, or open-ended when none did.
func TestAKeyedOperationIsRecordedOnce(t *testing.T) {
	h := newHistory()
	s := func(n int) time.Duration { return time.Duration(n) * time.Second }
	settled := keyedOp{history: h, client: 1, in: paymentInput{Payment: 1, Kind: opRefund, Key: "re-1", Amount: 10}}
	settled.attempted(answer{status: 503, call: s(1), ret: s(2)})
	settled.attempted(answer{status: 0, call: s(3), ret: s(4)})
	created := answer{status: 201, call: s(5), ret: s(6)}
	settled.attempted(created)
	settled.answered(created, paymentOutput{Known: true})
	settled.giveUp()

	unsettled := keyedOp{history: h, client: 2, in: paymentInput{Payment: 1, Kind: opRefund, Key: "re-2", Amount: 10}}
	unsettled.attempted(answer{status: 409, call: s(7), ret: s(8)})
	unsettled.attempted(answer{status: 503, call: s(9), ret: s(10)})
	unsettled.giveUp()

	refused := keyedOp{history: h, client: 3, in: paymentInput{Payment: 1, Kind: opRefund, Key: "re-3", Amount: 10}}
	refused.attempted(answer{status: 400, call: s(11), ret: s(12)})
	refused.giveUp()

	_, ops := h.snapshot()
	if len(ops) != 2 {
		t.Fatalf("%d operations recorded, want 2 (one per key that may have taken effect): %+v", len(ops), ops)
	}
	if ops[0].Call != int64(s(1)) || ops[0].Return != int64(s(6)) || !ops[0].Output.(paymentOutput).Known {
		t.Errorf("the settled refund: %+v, want from 1 s to 6 s, known", ops[0])
	}
	if ops[1].Call != int64(s(7)) || ops[1].Return != math.MaxInt64 || ops[1].Output.(paymentOutput).Known {
		t.Errorf("the unsettled refund: %+v, want from 7 s, open-ended", ops[1])
	}
}

// TestLargestHistoriesNameWhereTheSearchWent: an unfinished check names the payments with
// the most operations and their open-ended ones.
func TestLargestHistoriesNameWhereTheSearchWent(t *testing.T) {
	op := func(payment int, open bool) porcupine.Operation {
		o := porcupine.Operation{Input: paymentInput{Payment: payment}, Return: 1}
		if open {
			o.Return = math.MaxInt64
		}
		return o
	}
	partitions := [][]porcupine.Operation{
		{op(1, false)},
		{op(2, true), op(2, false), op(2, true)},
		{op(3, false), op(3, false)},
	}
	if got, want := largestHistories(partitions, 2), "largest: payment 2: 3 operations, 2 open-ended, payment 3: 2 operations, 0 open-ended"; got != want {
		t.Errorf("largestHistories:\n got %s\nwant %s", got, want)
	}
}
