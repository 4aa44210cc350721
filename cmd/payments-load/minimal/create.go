package main

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
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

// create is a fresh create as a naive server sends it: BEGIN, the claim (the key's row
// inserted), the payment insert, the lookup of subscribed webhook endpoints, the event and the
// stored response (the key's row updated) in one batch, COMMIT, each waiting for the one
// before. (The server sends BEGIN with the key's lock and row, and the writes with COMMIT,
// the key's row written once among them.) The fingerprint is the key itself (nothing is
// compared), the payment row is encoded once, for the event and the answer alike, and the
// card is always approved.
func create(ctx context.Context, pool *pgxpool.Pool, accountID, key string, body createBody) (db.Payment, []byte, error) {
	var p db.Payment
	var res []byte
	const operation = "payments.create"
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ptx pgx.Tx) error {
		tx := db.New(ptx)
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
		now := time.Now().UTC().Truncate(time.Microsecond)
		p = db.Payment{
			ID: domain.NewID("pay"), AccountID: accountID, Amount: body.Amount, Currency: body.Currency,
			Status: "succeeded", PaymentMethod: body.PaymentMethod, Metadata: []byte(`{}`), Version: 1, CreatedAt: now, UpdatedAt: now,
		}
		err = tx.PaymentInsert(ctx, db.PaymentInsertParams{
			ID: p.ID, AccountID: accountID, Amount: p.Amount, Currency: p.Currency,
			Status: p.Status, PaymentMethod: p.PaymentMethod, Metadata: p.Metadata, CreatedAt: now,
		})
		if err != nil {
			return err
		}
		if res, err = json.Marshal(p); err != nil {
			return err
		}
		var writes pgx.Batch
		later := db.Queue(&writes)
		if err := later.EventInsert(ctx, db.EventInsertParams{ID: domain.NewID("evt"), AccountID: accountID, Type: "payment.succeeded", Data: res}); err != nil {
			return err
		}
		if _, err := tx.WebhookEndpointListSubscribed(ctx, db.WebhookEndpointListSubscribedParams{AccountID: accountID, Type: "payment.succeeded"}); err != nil {
			return err
		}
		status := int32(201)
		err = later.IdempotencyKeySaveResponse(ctx, db.IdempotencyKeySaveResponseParams{
			ResponseStatus: &status, ResponseHeaders: []byte(`{"Content-Type":"application/json"}`), ResponseBody: res,
			AccountID: accountID, Operation: operation, Key: key,
		})
		if err != nil {
			return err
		}
		return ptx.SendBatch(ctx, &writes).Close()
	})
	return p, res, err
}
