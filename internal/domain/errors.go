// Package domain holds what every layer agrees on: the sentinel errors that name each way a
// request can fail, and the small types they carry. It imports only the standard library;
// internal/handlers maps each error to one RFC 9457 problem type.
package domain

import (
	"errors"
	"fmt"
)

// Sentinel errors. Wrap them with context (fmt.Errorf("get payment %s: %w", id, err)); the
// HTTP layer finds them with errors.Is.
var (
	// ErrNotFound: no such row in the caller's account (other accounts' rows are not found too).
	ErrNotFound = errors.New("not found")
	// ErrPreconditionRequired: an update was sent without the If-Match it needs.
	ErrPreconditionRequired = errors.New("precondition required")
	// ErrIdempotencyKeyInUse: the first request with this key has not finished yet.
	ErrIdempotencyKeyInUse = errors.New("idempotency key in use")
	// ErrIdempotencyKeyReused: the key was first used with a different request body.
	ErrIdempotencyKeyReused = errors.New("idempotency key reused with a different request")
	// ErrProcessorUnavailable: the card processor failed like an outage; nothing was stored.
	ErrProcessorUnavailable = errors.New("payment processor unavailable")
	// ErrJobNotCancelable: the job already finished, so there is nothing left to cancel.
	ErrJobNotCancelable = errors.New("job already finished")
)

// ValidationError is a request that is well-formed but invalid. Field is a JSON pointer into
// the body (/amount) or the name of a parameter or header.
type ValidationError struct {
	Field   string
	Message string
}

func (e *ValidationError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Message) }

// InvalidIdempotencyKeyError is an Idempotency-Key header that is missing or malformed.
type InvalidIdempotencyKeyError struct{ Reason string }

func (e *InvalidIdempotencyKeyError) Error() string { return "invalid Idempotency-Key: " + e.Reason }

// PreconditionFailedError is an If-Match that no longer matches. CurrentVersion (from which
// the HTTP layer derives the current ETag) lets the client re-read or retry at once.
type PreconditionFailedError struct{ CurrentVersion int32 }

func (e *PreconditionFailedError) Error() string {
	return fmt.Sprintf("precondition failed; current version is %d", e.CurrentVersion)
}

// RefundExceedsPaymentError is a refund larger than what is left of the payment.
type RefundExceedsPaymentError struct{ AmountRefundable int64 }

func (e *RefundExceedsPaymentError) Error() string {
	return fmt.Sprintf("refund exceeds payment: %d left to refund", e.AmountRefundable)
}

// PaymentNotRefundableError is a refund of a payment that captured nothing (it failed).
type PaymentNotRefundableError struct{ PaymentID string }

func (e *PaymentNotRefundableError) Error() string {
	return "payment " + e.PaymentID + " failed and cannot be refunded"
}

// WebhookEndpointDisabledError is a request to send to an endpoint that is disabled.
type WebhookEndpointDisabledError struct{ EndpointID string }

func (e *WebhookEndpointDisabledError) Error() string {
	return "webhook endpoint " + e.EndpointID + " is disabled"
}
