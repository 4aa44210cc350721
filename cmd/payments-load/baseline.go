package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/payments"
)

// Baselines are the database's own limit for the work a scenario asks of it: the same
// queries the server runs, sent directly through pgx from this process, with no HTTP,
// validation, authentication or logging. A scenario's ratio to its baseline is the share of
// that limit the whole server reaches.
const (
	baselineCreate = "sql-create" // one fresh create's statements in one transaction
	baselineGet    = "sql-get"    // the primary-key select of GET /payments/{id}
)

// baselines runs the SQL of a fresh create and of a read against the server's database.
type baselines struct {
	pool      *pgxpool.Pool
	accountID string
	run       string
	seq       atomic.Uint64 // numbers the keys of sql-create
	paymentID string        // read by sql-get
}

func newBaselines(ctx context.Context, pool *pgxpool.Pool, apiKey, run string) (*baselines, error) {
	acct, err := accounts.Authenticate(ctx, db.New(pool), apiKey)
	if err != nil {
		return nil, fmt.Errorf("baseline account: %w", err)
	}
	b := &baselines{pool: pool, accountID: acct.ID, run: run}
	p, err := b.createPayment(ctx, run+"-sql-fixture")
	if err != nil {
		return nil, err
	}
	b.paymentID = p.ID
	return b, nil
}

func (b *baselines) workload(name string) workload {
	switch name {
	case baselineCreate:
		return func(ctx context.Context, _, _ int) error {
			_, err := b.createPayment(ctx, fmt.Sprintf("%s-sql-create-%d", b.run, b.seq.Add(1)))
			return err
		}
	case baselineGet:
		return func(ctx context.Context, _, _ int) error {
			_, err := db.New(b.pool).PaymentGetByID(ctx, db.PaymentGetByIDParams{AccountID: b.accountID, ID: b.paymentID})
			return err
		}
	}
	panic("unknown baseline " + name)
}

// createPayment is a fresh create's statements in the order and the round trips the server
// sends them: BEGIN with the key's lock and its row, the lookup of the webhook endpoints to
// fan the event out to, then the payment, its event and the key's row with COMMIT.
func (b *baselines) createPayment(ctx context.Context, key string) (db.Payment, error) {
	var p db.Payment
	used := db.IdempotencyKeyAhead(db.IdempotencyKeyGetParams{AccountID: b.accountID, Operation: "payments.create", Key: key})
	err := db.InTx(ctx, b.pool, func(tx db.Tx) error {
		acquired, err := tx.IdempotencyKeyLock(ctx, b.accountID+"|payments.create|"+key)
		if err != nil {
			return fmt.Errorf("lock %s: %w", key, err)
		}
		_, found, err := used.Row()
		switch {
		case err != nil:
			return fmt.Errorf("read key %s: %w", key, err)
		case found || !acquired:
			return fmt.Errorf("claim %s: the key was already used, or is in use", key)
		}
		now := time.Now().UTC().Truncate(time.Microsecond)
		p = db.Payment{
			ID: domain.NewID("pay"), AccountID: b.accountID, Amount: 2500, Currency: "usd", Status: payments.StatusSucceeded,
			PaymentMethod: "pm_card_visa", Metadata: []byte(`{}`), Version: 1, CreatedAt: now, UpdatedAt: now,
		}
		err = tx.Later.PaymentInsert(ctx, db.PaymentInsertParams{
			ID: p.ID, AccountID: p.AccountID, Amount: p.Amount, Currency: p.Currency, Status: p.Status,
			PaymentMethod: p.PaymentMethod, Metadata: p.Metadata, CreatedAt: now,
		})
		if err != nil {
			return err
		}
		body, err := resourceJSON(p)
		if err != nil {
			return err
		}
		err = tx.Later.EventInsert(ctx, db.EventInsertParams{ID: domain.NewID("evt"), AccountID: b.accountID, Type: "payment.succeeded", Data: body})
		if err != nil {
			return err
		}
		// The event's fan-out looks up the subscribed webhook endpoints (none in a load run).
		_, err = tx.WebhookEndpointListSubscribed(ctx, db.WebhookEndpointListSubscribedParams{AccountID: b.accountID, Type: "payment.succeeded"})
		if err != nil {
			return err
		}
		status := int32(201)
		return tx.Later.IdempotencyKeyInsert(ctx, db.IdempotencyKeyInsertParams{
			AccountID: b.accountID, Operation: "payments.create", Key: key, Fingerprint: []byte(key),
			ResponseStatus: &status, ResponseHeaders: []byte(`{"Content-Type":"application/json"}`), ResponseBody: body,
			TtlSeconds: idempotency.DefaultTTL.Seconds(),
		})
	}, used)
	return p, err
}

func resourceJSON(p db.Payment) ([]byte, error) {
	res, err := payments.Resource(p)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}
