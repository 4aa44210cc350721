package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/idempotency"
)

// createBody is what a create reads of its request: bound, not validated.
type createBody struct {
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
	PaymentMethod string `json:"payment_method"`
}

var errKeyUsed = errors.New("idempotency key already used")

// create is the server's fresh create as plain statements in the server's order, with its
// deferred writes (db.Tx.Later). The fingerprint is the key itself (nothing is compared),
// the payment row is encoded once, for the event and the answer alike, and the card is
// always approved.
func create(ctx context.Context, pool *pgxpool.Pool, accountID, key string, body createBody) (db.Payment, []byte, error) {
	var p db.Payment
	var res []byte
	const operation = "payments.create"
	err := db.InTx(ctx, pool, func(tx db.Tx) error {
		claim, err := tx.IdempotencyKeyClaim(ctx, db.IdempotencyKeyClaimParams{
			LockKey: accountID + "|" + operation + "|" + key, AccountID: accountID,
			Operation: operation, Key: key, Fingerprint: []byte(key), TtlSeconds: idempotency.DefaultTTL.Seconds(),
		})
		if err != nil {
			return err
		}
		if !claim.Claimed || claim.ResponseStatus != nil {
			return errKeyUsed
		}
		p, err = tx.PaymentInsert(ctx, db.PaymentInsertParams{
			ID: domain.NewID("pay"), AccountID: accountID, Amount: body.Amount, Currency: body.Currency,
			Status: "succeeded", PaymentMethod: body.PaymentMethod, Metadata: []byte(`{}`),
		})
		if err != nil {
			return err
		}
		if res, err = json.Marshal(p); err != nil {
			return err
		}
		if err := tx.Later.EventInsert(ctx, db.EventInsertParams{ID: domain.NewID("evt"), AccountID: accountID, Type: "payment.succeeded", Data: res}); err != nil {
			return err
		}
		if _, err := tx.WebhookEndpointListSubscribed(ctx, db.WebhookEndpointListSubscribedParams{AccountID: accountID, Type: "payment.succeeded"}); err != nil {
			return err
		}
		status := int32(201)
		return tx.Later.IdempotencyKeySaveResponse(ctx, db.IdempotencyKeySaveResponseParams{
			ResponseStatus: &status, ResponseHeaders: []byte(`{"Content-Type":"application/json"}`), ResponseBody: res,
			AccountID: accountID, Operation: operation, Key: key,
		})
	})
	return p, res, err
}
