package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The load: each worker creates a payment, then races refunds and reads on it, and now and
// then asks for a report. Every create and refund carries an idempotency key and is retried
// with the same key after a lost answer, until an answer tells what happened.

const (
	refundsPerPayment = 3 // racing refunds, each a quarter to a half: some must be rejected
	readersPerPayment = 2
	readsPerReader    = 3
	maxAttempts       = 20 // per idempotency key, a bound on retries through a long fault
	reportEvery       = 10 // payments per report job
)

type load struct {
	client   *client
	run      string // prefixes idempotency keys, so runs never share one
	payments atomic.Int64
	keys     sync.Map // create key → payment id ("" while unknown)
	refunds  sync.Map // refund key → refund id, for the refunds answered 201
	reports  atomic.Int64
}

// work runs until stop closes, finishing the payment in hand; ctx bounds every request.
func (l *load) work(ctx context.Context, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done(): // no request could be sent
			return
		default:
		}
		p := int(l.payments.Add(1))
		l.payment(ctx, p)
		if p%reportEvery == 0 {
			l.report(ctx, p)
		}
	}
}

func (l *load) payment(ctx context.Context, p int) {
	key := fmt.Sprintf("%s-pay-%d", l.run, p)
	amount := 1000 + rand.Int64N(9000)
	id, ok := l.create(ctx, p, key, amount)
	if !ok {
		return
	}
	var wg sync.WaitGroup
	for r := range refundsPerPayment {
		wg.Go(func() {
			l.refund(ctx, p, 1+r, id, fmt.Sprintf("%s-re-%d", key, r), amount*(25+rand.Int64N(26))/100)
		})
	}
	for r := range readersPerPayment {
		wg.Go(func() {
			for range readsPerReader {
				l.read(ctx, p, 1+refundsPerPayment+r, id)
			}
		})
	}
	wg.Wait()
	l.read(ctx, p, 0, id) // after every refund answered: must see all that succeeded
}

// create posts the payment until an answer says it exists, and returns its id.
func (l *load) create(ctx context.Context, p int, key string, amount int64) (string, bool) {
	l.keys.Store(key, "")
	op := keyedOp{history: l.client.history, client: 0, in: paymentInput{Payment: p, Kind: opCreate, Key: key, Amount: amount}}
	defer op.giveUp()
	body := map[string]any{"amount": amount, "currency": "usd", "payment_method": "pm_card_visa",
		"metadata": map[string]string{"chaos_key": key}}
	for range maxAttempts {
		a := l.client.do(ctx, http.MethodPost, "/payments", body, "Idempotency-Key", key)
		op.attempted(a)
		switch {
		case a.status == http.StatusCreated:
			var pay struct {
				ID             string `json:"id"`
				Amount         int64  `json:"amount"`
				AmountRefunded int64  `json:"amount_refunded"`
			}
			if json.Unmarshal(a.body, &pay) != nil {
				return "", false
			}
			op.answered(a, paymentOutput{Known: true, Amount: pay.Amount,
				Refunded: pay.AmountRefunded, Version: etagVersion(a.header.Get("ETag"))})
			l.keys.Store(key, pay.ID)
			return pay.ID, true
		case !a.lost() && !retryable(a.status):
			return "", false
		}
		if ctx.Err() != nil {
			return "", false
		}
		pause(ctx, a)
	}
	return "", false
}

// refund posts one refund until an answer says whether it happened.
func (l *load) refund(ctx context.Context, p, clientID int, paymentID, key string, amount int64) {
	op := keyedOp{history: l.client.history, client: clientID, in: paymentInput{Payment: p, Kind: opRefund, Key: key, Amount: amount}}
	defer op.giveUp()
	body := map[string]any{"payment_id": paymentID, "amount": amount}
	for range maxAttempts {
		a := l.client.do(ctx, http.MethodPost, "/refunds", body, "Idempotency-Key", key)
		op.attempted(a)
		switch {
		case a.status == http.StatusCreated:
			op.answered(a, paymentOutput{Known: true})
			var refund struct{ ID string }
			if json.Unmarshal(a.body, &refund) == nil && refund.ID != "" {
				l.refunds.Store(key, refund.ID)
			}
			return
		case a.status == http.StatusUnprocessableEntity:
			op.answered(a, paymentOutput{Known: true, Rejected: true})
			return
		case !a.lost() && !retryable(a.status):
			return
		}
		if ctx.Err() != nil {
			return
		}
		pause(ctx, a)
	}
}

// keyedOp is one operation with an idempotency key, however many attempts it takes: the
// attempts share the key, so together they take effect at most once, somewhere between the
// first attempt's call and the answer that says how it went. It is recorded as that one
// operation: each attempt whose answer was lost, recorded on its own, would be one more
// open-ended operation for Porcupine to place (a refund retried each second through a 20 s
// outage, twenty of them), though the key lets only one attempt take effect.
type keyedOp struct {
	history *history
	client  int
	in      paymentInput
	first   time.Duration // the first attempt's call
	started bool          // an attempt was made
	lost    bool          // an attempt's answer was lost: it may have taken effect
	done    bool          // recorded
}

func (o *keyedOp) attempted(a answer) {
	if !o.started {
		o.first, o.started = a.call, true
	}
	o.lost = o.lost || a.lost()
}

// answered records the operation with the answer that settled it.
func (o *keyedOp) answered(a answer, out paymentOutput) {
	o.history.addOp(o.client, o.in, o.first, a.ret, out)
	o.done = true
}

// giveUp records an operation no answer settled, if one of its attempts may have taken
// effect: open-ended from its first call.
func (o *keyedOp) giveUp() {
	if !o.done && o.lost {
		o.history.addOp(o.client, o.in, o.first, o.first, paymentOutput{}) // addOp leaves its return open
	}
}

// read gets the payment once; an answer lost tells nothing and is left out of the history.
func (l *load) read(ctx context.Context, p, clientID int, paymentID string) {
	in := paymentInput{Payment: p, Kind: opRead}
	a := l.client.do(ctx, http.MethodGet, "/payments/"+paymentID, nil)
	switch a.status {
	case http.StatusOK:
		var pay struct {
			AmountRefunded int64 `json:"amount_refunded"`
		}
		if json.Unmarshal(a.body, &pay) == nil {
			l.client.history.addOp(clientID, in, a.call, a.ret, paymentOutput{Known: true,
				Refunded: pay.AmountRefunded, Version: etagVersion(a.header.Get("ETag"))})
		}
	case http.StatusNotFound:
		l.client.history.addOp(clientID, in, a.call, a.ret, paymentOutput{Known: true, Missing: true})
	}
}

// report asks for a report job, retrying its key until it is accepted; the invariants then
// check that every job the database holds ends.
func (l *load) report(ctx context.Context, p int) {
	key := fmt.Sprintf("%s-report-%d", l.run, p)
	now := time.Now().UTC()
	body := map[string]any{"type": "payments", "format": "csv",
		"created_gte": now.Add(-time.Hour).Format(time.RFC3339), "created_lt": now.Add(time.Minute).Format(time.RFC3339)}
	for range maxAttempts {
		a := l.client.do(ctx, http.MethodPost, "/reports", body, "Idempotency-Key", key)
		if a.status == http.StatusAccepted {
			l.reports.Add(1)
			return
		}
		if !a.lost() && !retryable(a.status) || ctx.Err() != nil {
			return
		}
		pause(ctx, a)
	}
}

// retryable: the request had no effect and may be sent again (the key is in use by an
// attempt still running, or the rate limit said wait).
func retryable(status int) bool {
	return status == http.StatusConflict || status == http.StatusTooManyRequests
}
