package handlers_test

import (
	"context"
	"crypto/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// payment is the part of a payment body the tests read.
type payment struct {
	ID             string            `json:"id"`
	Amount         int64             `json:"amount"`
	Status         string            `json:"status"`
	AmountRefunded int64             `json:"amount_refunded"`
	FailureCode    *string           `json:"failure_code"`
	Description    *string           `json:"description"`
	Metadata       map[string]string `json:"metadata"`
}

func newKey() string { return "key-" + rand.Text() }

// visa is a POST /payments body that succeeds.
func visa(amount int) map[string]any {
	return map[string]any{"amount": amount, "currency": "usd", "payment_method": processor.CardVisa}
}

// createPayment makes a succeeded payment with a fresh key and returns it and its ETag.
func createPayment(t *testing.T, c *apitest.Client, amount int) (payment, string) {
	t.Helper()
	res := c.Post("/payments", visa(amount), apitest.Header("Idempotency-Key", newKey()))
	if res.Status != 201 {
		t.Fatalf("create payment: %d %s", res.Status, res.Body)
	}
	var p payment
	res.Decode(t, &p)
	return p, res.Header.Get("ETag")
}

// gatedProcessor holds every charge until open is called, so a test can act while the
// first request is provably still inside its transaction.
type gatedProcessor struct {
	started chan struct{} // closed when the first charge arrives
	release chan struct{}
	open    func() // lets every charge through; safe to call more than once
	once    sync.Once
	calls   atomic.Int32
}

func newGatedProcessor() *gatedProcessor {
	g := &gatedProcessor{started: make(chan struct{}), release: make(chan struct{})}
	g.open = sync.OnceFunc(func() { close(g.release) })
	return g
}

func (g *gatedProcessor) Charge(ctx context.Context, c processor.Charge) (processor.Result, error) {
	g.calls.Add(1)
	g.once.Do(func() { close(g.started) })
	<-g.release
	return processor.Simulated{}.Charge(ctx, c)
}

// waitCharging waits until the first charge has arrived: its request has claimed its key
// and sits inside its transaction until g opens.
func (g *gatedProcessor) waitCharging(t testing.TB) {
	t.Helper()
	select {
	case <-g.started:
	case <-time.After(10 * time.Second):
		t.Fatal("no request reached the processor within 10s")
	}
}

// flakyProcessor fails its first `failures` charges like an outage, then behaves.
type flakyProcessor struct {
	failures atomic.Int32
	calls    atomic.Int32
}

func (f *flakyProcessor) Charge(ctx context.Context, c processor.Charge) (processor.Result, error) {
	f.calls.Add(1)
	if f.failures.Add(-1) >= 0 {
		return processor.Result{}, domain.ErrProcessorUnavailable
	}
	return processor.Simulated{}.Charge(ctx, c)
}
