// Package accounts turns API keys into accounts (hashing, lookup cached briefly, see
// Authenticator, and seeding the demo keys) and makes and deletes throwaway accounts, which
// may carry rate-limit quotas of their own (Quotas).
// It imports the database layer, the domain package and ratelimit (for its Rate).
package accounts

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
)

// HashKey is how a key is stored and looked up. SHA-256 without a salt is enough for API
// keys (unlike passwords) because they are long random strings: there is nothing to guess.
func HashKey(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return sum[:]
}

// Authenticate returns the account an active key belongs to, or domain.ErrNotFound.
func Authenticate(ctx context.Context, q *db.Queries, key string) (db.Account, error) {
	acct, err := q.AccountGetByAPIKeyHash(ctx, HashKey(key))
	if err != nil {
		return db.Account{}, fmt.Errorf("authenticate key: %w", db.Translate(err))
	}
	return acct, nil
}

// SeedDemoKeys makes sure each key exists with an account of its own. A key seeded before
// keeps its account; a new one gets a random account id, as a throwaway account does. (Every
// request's log line names its account: an id derived from the key would let whoever reads
// the logs test guesses at the key without asking the server.) Servers starting at once seed
// the same new key together: the insert of its row that comes second finds the first's and
// does nothing, and its transaction rolls back the account it made for the key.
func SeedDemoKeys(ctx context.Context, pool *pgxpool.Pool, keys []string) error {
	for _, key := range keys {
		err := db.InTx(ctx, pool, func(tx db.Tx) error {
			accountID := domain.NewID("acct")
			if err := tx.AccountCreate(ctx, db.AccountCreateParams{ID: accountID}); err != nil {
				return fmt.Errorf("seed an account: %w", err)
			}
			created, err := tx.APIKeyCreateIfMissing(ctx, db.APIKeyCreateIfMissingParams{
				ID:        domain.NewID("key"),
				AccountID: accountID,
				KeyHash:   HashKey(key),
				Prefix:    visiblePrefix(key),
			})
			switch {
			case err != nil:
				return fmt.Errorf("seed API key %s...: %w", visiblePrefix(key), err)
			case created == 0:
				return errSeededBefore
			}
			return nil
		})
		if err != nil && !errors.Is(err, errSeededBefore) {
			return err
		}
	}
	return nil
}

// errSeededBefore rolls back the account made for a key that has one already.
var errSeededBefore = errors.New("the key has an account already")

// visiblePrefix is the part of a key that is safe to show (in logs, in a dashboard): at most
// its first quarter, and at most 8 characters. A generated key shows "sk_test_"; a short
// operator's key (DEMO_API_KEYS takes 8 characters and more) shows 2 or 3, where the first 8
// of a 9-character key would leave one to guess.
func visiblePrefix(key string) string {
	return key[:min(8, len(key)/4)]
}
