package payments

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/events"
)

// RefundParams is a validated POST /refunds body, plus the optional If-Match.
type RefundParams struct {
	PaymentID string
	Amount    *int64 // nil: everything not yet refunded
	Reason    *string
	Metadata  map[string]string
	IfMatch   *domain.Precondition // nil: refund whatever the payment's current version
}

// Refund returns money from a payment, in tx: the caller's transaction, which has already
// claimed the idempotency key. The payment row is locked first (SELECT ... FOR UPDATE), so
// concurrent refunds of one payment run one after another and each checks the amount its
// predecessors left: together they can never exceed the payment. (The CHECK on
// amount_refunded in the schema would refuse it anyway.)
func (s *Service) Refund(ctx context.Context, tx db.Tx, accountID string, p RefundParams) (db.Refund, error) {
	pay, err := tx.PaymentGetForUpdate(ctx, db.PaymentGetForUpdateParams{AccountID: accountID, ID: p.PaymentID})
	err = db.NotFoundOrAccountDeleted(ctx, tx.Queries, accountID, err)
	if err := db.NotFoundAsInvalid(err, "/payment_id", "no payment with this id in your account"); err != nil {
		return db.Refund{}, err
	}
	amount, err := refundAmount(pay, p)
	if err != nil {
		return db.Refund{}, err
	}
	if p.Metadata == nil {
		p.Metadata = map[string]string{}
	}
	metadata, err := json.Marshal(p.Metadata)
	if err != nil {
		return db.Refund{}, err
	}
	refund, err := tx.RefundInsert(ctx, db.RefundInsertParams{
		ID:        domain.NewID("re"),
		AccountID: accountID,
		PaymentID: pay.ID,
		Amount:    amount,
		Currency:  pay.Currency,
		Reason:    p.Reason,
		Metadata:  metadata,
	})
	if err != nil {
		return db.Refund{}, fmt.Errorf("insert refund: %w", err)
	}
	pay, err = tx.PaymentAddRefund(ctx, db.PaymentAddRefundParams{Amount: amount, AccountID: accountID, ID: pay.ID})
	if err != nil {
		return db.Refund{}, fmt.Errorf("add refund to payment %s: %w", p.PaymentID, err)
	}
	res, err := RefundResource(refund)
	if err != nil {
		return db.Refund{}, err
	}
	if err := s.outbox.Record(ctx, tx, accountID, events.RefundSucceeded, res); err != nil {
		return db.Refund{}, err
	}
	_, err = s.recordEvent(ctx, tx, events.PaymentUpdated, pay)
	return refund, err
}

// refundAmount checks a refund against the locked payment and returns its amount.
func refundAmount(pay db.Payment, p RefundParams) (int64, error) {
	if pay.Status == StatusFailed {
		return 0, &domain.PaymentNotRefundableError{PaymentID: pay.ID}
	}
	if p.IfMatch != nil && !p.IfMatch.Matches(pay.Version) {
		return 0, &domain.PreconditionFailedError{CurrentVersion: pay.Version}
	}
	left := pay.Amount - pay.AmountRefunded
	amount := left
	if p.Amount != nil {
		amount = *p.Amount
	}
	if left == 0 || amount > left {
		return 0, &domain.RefundExceedsPaymentError{AmountRefundable: left}
	}
	return amount, nil
}

// GetRefund returns one refund of the account.
func (s *Service) GetRefund(ctx context.Context, accountID, id string) (db.Refund, error) {
	r, err := db.Reads(s.pool).RefundGetByID(ctx, db.RefundGetByIDParams{AccountID: accountID, ID: id})
	if err != nil {
		return db.Refund{}, fmt.Errorf("get refund %s: %w", id, db.Translate(err))
	}
	return r, nil
}

// RefundListParams pages the account's refunds, optionally of one payment.
type RefundListParams struct {
	db.Page
	PaymentID *string
}

// ListRefunds returns one page, newest first, and whether another page follows.
func (s *Service) ListRefunds(ctx context.Context, accountID string, p RefundListParams) ([]db.Refund, bool, error) {
	q := db.Reads(s.pool)
	if p.PaymentID != nil {
		_, err := q.PaymentGetByID(ctx, db.PaymentGetByIDParams{AccountID: accountID, ID: *p.PaymentID})
		if err := db.NotFoundAsInvalid(err, "payment_id", "no such payment"); err != nil {
			return nil, false, err
		}
	}
	createdAt := func(id string) (time.Time, error) {
		r, err := q.RefundGetByID(ctx, db.RefundGetByIDParams{AccountID: accountID, ID: id})
		return r.CreatedAt, err
	}
	return db.ListPage(p.Page, "refund", createdAt, func(after db.After, rowLimit int32) ([]db.Refund, error) {
		// A query for each, so each has an index that leads with its equality columns.
		if p.PaymentID == nil {
			return q.RefundList(ctx, db.RefundListParams{
				AccountID: accountID, AfterCreatedAt: after.CreatedAt, AfterID: after.ID, RowLimit: rowLimit,
			})
		}
		return q.RefundListByPayment(ctx, db.RefundListByPaymentParams{
			AccountID: accountID, PaymentID: *p.PaymentID, AfterCreatedAt: after.CreatedAt, AfterID: after.ID, RowLimit: rowLimit,
		})
	})
}
