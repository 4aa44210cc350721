package handlers

import (
	"context"
	"net/http"

	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/payments"
)

// CreateRefund refunds a payment at most once per Idempotency-Key. Claim, lock, check,
// refund, payment update and events are one transaction; any refusal (400 for a payment_id
// the account does not have, 409, 412, 422) rolls it back, so nothing is stored and the key
// stays free.
func (s *Server) CreateRefund(ctx context.Context, req api.CreateRefundRequestObject) (api.CreateRefundResponseObject, error) {
	acct := accountFrom(ctx)
	idem, err := idempotency.NewRequest(acct.ID, "refunds.create", req.Params.IdempotencyKey, decodedBodyFrom(ctx))
	if err != nil {
		return nil, err
	}
	params := payments.RefundParams{
		PaymentID: req.Body.PaymentId,
		Amount:    req.Body.Amount,
		Reason:    (*string)(req.Body.Reason),
		Metadata:  derefMap(req.Body.Metadata),
	}
	if params.IfMatch, err = optionalIfMatch(req.Params.IfMatch); err != nil {
		return nil, err
	}
	res, err := s.idempotency.Do(ctx, idem, func(tx db.Tx) (idempotency.Response, error) {
		refund, err := s.payments.Refund(ctx, tx, acct.ID, params)
		if params.IfMatch != nil {
			_ = traceIfMatch(ctx, err)
		}
		if err != nil {
			return idempotency.Response{}, err
		}
		return refundResponse(refund)
	})
	if err != nil {
		return nil, err
	}
	return storedResponse(res), nil
}

// refundResponse is the 201 for a new refund, with its Location.
func refundResponse(r db.Refund) (idempotency.Response, error) {
	res, err := payments.RefundResource(r)
	if err != nil {
		return idempotency.Response{}, err
	}
	return jsonResponse(http.StatusCreated, res, map[string]string{"Location": "/refunds/" + r.ID})
}

// GetRefund returns one refund of the account.
func (s *Server) GetRefund(ctx context.Context, req api.GetRefundRequestObject) (api.GetRefundResponseObject, error) {
	r, err := s.payments.GetRefund(ctx, accountFrom(ctx).ID, req.Id)
	if err != nil {
		return nil, err
	}
	res, err := payments.RefundResource(r)
	if err != nil {
		return nil, err
	}
	return api.GetRefund200JSONResponse{Body: res}, nil
}

// ListRefunds pages through the account's refunds, newest first.
func (s *Server) ListRefunds(ctx context.Context, req api.ListRefundsRequestObject) (api.ListRefundsResponseObject, error) {
	params := payments.RefundListParams{Page: s.page(req.Params.Limit, req.Params.StartingAfter), PaymentID: req.Params.PaymentId}
	rows, hasMore, err := s.payments.ListRefunds(ctx, accountFrom(ctx).ID, params)
	if err != nil {
		return nil, err
	}
	data, err := resources(rows, payments.RefundResource)
	if err != nil {
		return nil, err
	}
	return api.ListRefunds200JSONResponse{Body: api.RefundList{Data: data, HasMore: hasMore}}, nil
}
