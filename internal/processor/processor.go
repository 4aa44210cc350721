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
	CardProcessingError   = "pm_card_processing_error"
)

// Simulated answers by test card token after Latency, so an SDK's tests are repeatable and a
// slow charge (PROCESSOR_LATENCY) makes in-flight retries observable.
type Simulated struct {
	Latency time.Duration
}

// Charge waits Latency (or until ctx ends), then answers for the token.
func (s Simulated) Charge(ctx context.Context, c Charge) (Result, error) {
	if s.Latency > 0 {
		timer := time.NewTimer(s.Latency)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-timer.C:
		}
	}
	switch c.PaymentMethod {
	case CardVisa:
		return Result{Approved: true}, nil
	case CardDeclined:
		return Result{FailureCode: "card_declined"}, nil
	case CardInsufficientFunds:
		return Result{FailureCode: "insufficient_funds"}, nil
	case CardProcessingError:
		return Result{}, domain.ErrProcessorUnavailable
	default:
		// The request validator only lets the tokens above through.
		return Result{}, fmt.Errorf("unknown test card %q", c.PaymentMethod)
	}
}
