package accounts

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
)

// TestAccount is a new throwaway account and its only API key, in clear: the one time it
// exists outside the client's hands.
type TestAccount struct {
	AccountID string
	APIKey    string
}

// CreateTestAccount makes an empty account with one fresh API key (130 random bits) and the
// quotas it asked for, which the caller has checked against the server's.
func CreateTestAccount(ctx context.Context, pool *pgxpool.Pool, quotas Quotas) (TestAccount, error) {
	acct := TestAccount{AccountID: domain.NewID("acct"), APIKey: "sk_test_" + rand.Text()}
	row := db.AccountCreateParams{ID: acct.AccountID}
	row.RateLimitDefaultQuota, row.RateLimitDefaultWindowSeconds = rateColumns(quotas.Default)
	row.RateLimitWritesQuota, row.RateLimitWritesWindowSeconds = rateColumns(quotas.Writes)
	err := db.InTx(ctx, pool, func(tx db.Tx) error {
		if err := tx.AccountCreate(ctx, row); err != nil {
			return err
		}
		_, err := tx.APIKeyCreateIfMissing(ctx, db.APIKeyCreateIfMissingParams{
			ID:        domain.NewID("key"),
			AccountID: acct.AccountID,
			KeyHash:   HashKey(acct.APIKey),
			Prefix:    visiblePrefix(acct.APIKey),
		}) // 130 random bits: no other key has its hash
		return err
	})
	if err != nil {
		return TestAccount{}, fmt.Errorf("create test account: %w", err)
	}
	return acct, nil
}

// Delete removes the account and every row of it, in one transaction that first locks the
// rows its requests and jobs lock, then the account (queries/accounts.sql). The deletes are
// queued and sent in one round trip before the commit, children before parents. The caller
// must make its Authenticator forget the account's keys.
func Delete(ctx context.Context, pool *pgxpool.Pool, accountID string) error {
	err := db.InTx(ctx, pool, func(tx db.Tx) error {
		// The rows other transactions lock before referencing the account, then the account's
		// own: the order that leaves no deadlock (queries/accounts.sql).
		for _, lock := range []func(context.Context, string) error{
			tx.PaymentLockByAccount, tx.JobLockByAccount,
		} {
			if err := lock(ctx, accountID); err != nil {
				return err
			}
		}
		if _, err := tx.AccountGetForUpdate(ctx, accountID); err != nil {
			return db.Translate(err)
		}
		q := tx.Later
		for _, del := range []func(context.Context, string) error{
			q.WebhookAttemptDeleteByAccount,
			q.WebhookDeliveryDeleteByAccount,
			q.WebhookEndpointDeleteByAccount,
			q.ReportDeleteByAccount,
			q.JobDeleteByAccount,
			q.EventDeleteByAccount,
			q.RefundDeleteByAccount,
			q.PaymentDeleteByAccount,
			q.IdempotencyKeyDeleteByAccount,
			q.APIKeyDeleteByAccount,
			q.AccountDelete,
		} {
			if err := del(ctx, accountID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete account %s: %w", accountID, err)
	}
	return nil
}

// ForgetAccount drops every cached key of the account at once, so a deleted account's keys
// answer 401 on this server from the next request on (other processes forget them within
// their TTL).
func (a *Authenticator) ForgetAccount(accountID string) {
	if a.cache == nil {
		return
	}
	for hash, acct := range a.cache.All() {
		if acct.ID == accountID {
			a.cache.Invalidate(hash)
		}
	}
}
