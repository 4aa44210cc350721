// Package processor is the card processor behind payments: an interface, and a simulated,
// deterministic implementation driven by test card tokens. It imports only the domain package.
package processor

import (
	"context"
	"fmt"
	"time"

	"github.com/payments-api/payments-api/internal/domain"
)

// Charge is what the processor is asked to collect.
type Charge struct {
	Amount        int64
	Currency      string
	PaymentMethod string
}

// Result is the processor's answer to a charge it could process: approved, or declined
// with a failure code. An outage is an error instead (domain.ErrProcessorUnavailable).
type Result struct {
	Approved    bool
	FailureCode string
}

// Processor charges cards.
type Processor interface {
	Charge(ctx context.Context, c Charge) (Result, error)
}

// Test card tokens and what they do.
const (
	CardVisa              = "pm_card_visa"
	CardDeclined          = "pm_card_declined"
	CardInsufficientFunds = "pm_card_insufficient_funds"
	CardExpired           = "pm_card_expired"
	CardIncorrectCVC      = "pm_card_incorrect_cvc"
	CardFraudulent        = "pm_card_fraudulent"
	CardProcessingError   = "pm_card_processing_error"
	// CardSlow succeeds after Latency plus SlowCardDelay, so a retry sent meanwhile meets
	// the first request in flight (409) without restarting the server with a latency.
	CardSlow = "pm_card_slow"
)

// SlowCardDelay is what CardSlow waits beyond Latency.
const SlowCardDelay = 2 * time.Second

// declines are the cards that are declined, with the failure code each is declined with.
var declines = map[string]string{
	CardDeclined:          "card_declined",
	CardInsufficientFunds: "insufficient_funds",
	CardExpired:           "expired_card",
	CardIncorrectCVC:      "incorrect_cvc",
	CardFraudulent:        "fraudulent",
}

// Simulated answers by test card token after Latency, so an SDK's tests are repeatable and a
// slow charge (PROCESSOR_LATENCY) makes in-flight retries observable.
type Simulated struct {
	Latency time.Duration
}

// Charge waits Latency (plus SlowCardDelay for CardSlow), or until ctx ends, then answers
// for the token.
func (s Simulated) Charge(ctx context.Context, c Charge) (Result, error) {
	wait := s.Latency
	if c.PaymentMethod == CardSlow {
		wait += SlowCardDelay
	}
	if err := sleep(ctx, wait); err != nil {
		return Result{}, err
	}
	if code, ok := declines[c.PaymentMethod]; ok {
		return Result{FailureCode: code}, nil
	}
	switch c.PaymentMethod {
	case CardVisa, CardSlow:
		return Result{Approved: true}, nil
	case CardProcessingError:
		return Result{}, domain.ErrProcessorUnavailable
	default:
		// The request validator only lets the tokens above through.
		return Result{}, fmt.Errorf("unknown test card %q", c.PaymentMethod)
	}
}

// sleep waits d, or less if ctx ends first (then its error).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
