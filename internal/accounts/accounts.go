// Package accounts turns API keys into accounts (hashing, lookup cached briefly, see
// Authenticator, and seeding the demo keys) and makes and deletes throwaway accounts, which
// may carry rate-limit quotas of their own (Quotas).
// It imports the database layer, the domain package and ratelimit (for its Rate).
package accounts

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"fmt"

	"github.com/payments-api/payments-api/internal/db"
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

// SeedDemoKeys makes sure each key exists with an account of its own. The ids are derived
// from the key's hash, so seeding is idempotent and a demo key keeps its account id across
// restarts and across servers that start at the same time.
func SeedDemoKeys(ctx context.Context, q *db.Queries, keys []string) error {
	for _, key := range keys {
		hash := HashKey(key)
		suffix := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(hash)[:24]
		accountID := "acct_" + suffix
		if err := q.AccountCreateIfMissing(ctx, accountID); err != nil {
			return fmt.Errorf("seed account %s: %w", accountID, err)
		}
		err := q.APIKeyCreateIfMissing(ctx, db.APIKeyCreateIfMissingParams{
			ID:        "key_" + suffix,
			AccountID: accountID,
			KeyHash:   hash,
			Prefix:    visiblePrefix(key),
		})
		if err != nil {
			return fmt.Errorf("seed API key for %s: %w", accountID, err)
		}
	}
	return nil
}

// visiblePrefix is the part of a key that is safe to show (in logs, in a dashboard): at most
// its first quarter, and at most 8 characters. A generated key shows "sk_test_"; a short
// operator's key (DEMO_API_KEYS takes 8 characters and more) shows 2 or 3, where the first 8
// of a 9-character key would leave one to guess.
func visiblePrefix(key string) string {
	return key[:min(8, len(key)/4)]
}
