package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The linearizability model: one payment as a sequential object. Every request the load
// makes about a payment is an operation on it; Porcupine searches for one order of them,
// each placed between its call and its return, that this model accepts. Invariant counts
// in the database cannot see a read that returned a state that never existed (a stale
// amount_refunded, a version that skipped); this can.

// opKind is what an operation did to its payment.
type opKind int8

const (
	opCreate opKind = iota // POST /payments with an idempotency key
	opRefund               // POST /refunds with an idempotency key
	opRead                 // GET /payments/{id}
)

// paymentInput is what the client asked.
type paymentInput struct {
	Payment int    // which payment: the partition
	Kind    opKind //
	Key     string // the idempotency key of a create or a refund
	Amount  int64  // a create's amount, a refund's amount
}

// paymentOutput is what the client was answered. Known is false when the answer was lost
// (a timeout, a dropped connection, a 5xx): the request may or may not have taken effect,
// and its return time is open-ended.
type paymentOutput struct {
	Known    bool
	Rejected bool  // a refund answered 422 refund-exceeds-payment
	Missing  bool  // a read answered 404
	Amount   int64 // a create's amount
	Refunded int64 // amount_refunded from a create or a read
	Version  int64 // from the ETag ("vN") of a create or a read
}

// paymentState is the payment the model holds. Refunds lists the idempotency keys of the
// refunds applied, joined, so that states compare with == (Porcupine's default Equal).
type paymentState struct {
	Exists   bool
	Amount   int64
	Refunded int64
	Version  int64
	Refunds  string
}

// firstVersion is a new payment's version: its ETag is "v1".
const firstVersion = 1

func (s paymentState) refunded(key string) bool {
	return slices.Contains(strings.Split(s.Refunds, "|"), key)
}

// stepPayment is the model's transition: whether out is a possible answer to in on s, and
// the state after.
func stepPayment(s paymentState, in paymentInput, out paymentOutput) (bool, paymentState) {
	switch in.Kind {
	case opCreate:
		return stepCreate(s, in, out)
	case opRefund:
		return stepRefund(s, in, out)
	default:
		if out.Missing {
			return !s.Exists, s
		}
		return s.Exists && (!out.Known || out.Refunded == s.Refunded && out.Version == s.Version), s
	}
}

// stepCreate: the first create makes the payment; a retry with the key replays the first
// answer byte for byte, so every known answer shows the payment as it was created.
func stepCreate(s paymentState, in paymentInput, out paymentOutput) (bool, paymentState) {
	if out.Known && (out.Amount != in.Amount || out.Refunded != 0 || out.Version != firstVersion) {
		return false, s
	}
	if s.Exists {
		return true, s
	}
	return true, paymentState{Exists: true, Amount: in.Amount, Version: firstVersion}
}

// stepRefund: a key already applied replays its success; otherwise the refund applies when
// it fits in what is left (bumping the version) and is rejected, changing nothing, when not.
func stepRefund(s paymentState, in paymentInput, out paymentOutput) (bool, paymentState) {
	if !s.Exists {
		return false, s
	}
	if s.refunded(in.Key) {
		return !out.Rejected, s
	}
	if s.Refunded+in.Amount > s.Amount {
		return !out.Known || out.Rejected, s
	}
	if out.Rejected {
		return false, s
	}
	next := s
	next.Refunded += in.Amount
	next.Version++
	next.Refunds = strings.TrimPrefix(s.Refunds+"|"+in.Key, "|")
	return true, next
}

// paymentModel is the model Porcupine checks each payment's history against.
var paymentModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byPayment := map[int][]porcupine.Operation{}
		var order []int
		for _, op := range history {
			p := op.Input.(paymentInput).Payment
			if _, seen := byPayment[p]; !seen {
				order = append(order, p)
			}
			byPayment[p] = append(byPayment[p], op)
		}
		partitions := make([][]porcupine.Operation, 0, len(order))
		for _, p := range order {
			partitions = append(partitions, byPayment[p])
		}
		return partitions
	},
	Init: func() any { return paymentState{} },
	Step: func(state, input, output any) (bool, any) {
		return stepPayment(state.(paymentState), input.(paymentInput), output.(paymentOutput))
	},
	DescribeOperation: func(input, output any) string {
		return describeOperation(input.(paymentInput), output.(paymentOutput))
	},
	DescribeState: func(state any) string {
		s := state.(paymentState)
		if !s.Exists {
			return "no payment"
		}
		return fmt.Sprintf("amount %d, refunded %d, v%d", s.Amount, s.Refunded, s.Version)
	},
}

func describeOperation(in paymentInput, out paymentOutput) string {
	var call string
	switch in.Kind {
	case opCreate:
		call = fmt.Sprintf("create(%d)", in.Amount)
	case opRefund:
		call = fmt.Sprintf("refund(%s, %d)", in.Key[strings.LastIndex(in.Key, "-")+1:], in.Amount)
	default:
		call = "read()"
	}
	switch {
	case !out.Known:
		return call + " → ?"
	case out.Rejected:
		return call + " → rejected"
	case out.Missing:
		return call + " → 404"
	case in.Kind == opRefund:
		return call + " → ok"
	}
	return fmt.Sprintf("%s → refunded %d, v%d", call, out.Refunded, out.Version)
}
