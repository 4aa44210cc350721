package accounts

import (
	"context"
	"fmt"
	"time"

	"github.com/maypok86/otter/v2"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
)

// Default cache bounds: a key looked up in the last 10 seconds costs no round trip, for at
// most 1,000 keys.
const (
	DefaultCacheSize = 1000
	DefaultCacheTTL  = 10 * time.Second
)

// Authenticator resolves API keys like Authenticate, but remembers each answer for a short
// while, so a busy client does not pay a database round trip before every request.
//
// The price is staleness: a key revoked (or an account changed) in the database keeps
// working on this server for up to TTL after its last lookup. Only active keys are
// remembered, never unknown ones, so a new key works at once and a flood of wrong keys
// cannot push the real ones out. The cache is bounded in size; the least useful entries are
// evicted first (otter's W-TinyLFU).
type Authenticator struct {
	queries *db.Queries
	cache   *otter.Cache[string, db.Account] // nil when TTL is 0: every request looks up its key
	only    map[string]bool                  // by hash; nil allows every active key (see OnlyKeys)
}

// NewAuthenticator caches up to size keys for ttl each. A ttl of 0 turns the cache off.
func NewAuthenticator(q *db.Queries, size int, ttl time.Duration) (*Authenticator, error) {
	a := &Authenticator{queries: q}
	if ttl <= 0 {
		return a, nil
	}
	cache, err := otter.New(&otter.Options[string, db.Account]{
		MaximumSize:      size,
		ExpiryCalculator: otter.ExpiryWriting[string, db.Account](ttl), // from the lookup, not the last use
	})
	if err != nil {
		return nil, fmt.Errorf("API key cache: %w", err)
	}
	a.cache = cache
	return a, nil
}

// OnlyKeys returns the authenticator accepting none but these keys, whatever else the
// database holds. Production uses it: a database that once served as a sandbox still holds
// the published demo key and throwaway accounts' keys, and none of them may open it.
func (a *Authenticator) OnlyKeys(keys []string) *Authenticator {
	cp := *a
	cp.only = make(map[string]bool, len(keys))
	for _, key := range keys {
		cp.only[string(HashKey(key))] = true
	}
	return &cp
}

// Cached returns the account of a key looked up within the last TTL, without a round trip.
// A key it does not know may still be good: Authenticate tells.
func (a *Authenticator) Cached(key string) (db.Account, bool) {
	if a.cache == nil {
		return db.Account{}, false
	}
	hash := string(HashKey(key))
	if a.only != nil && !a.only[hash] {
		return db.Account{}, false
	}
	return a.cache.GetIfPresent(hash)
}

// Authenticate returns the account an active key belongs to, or domain.ErrNotFound.
func (a *Authenticator) Authenticate(ctx context.Context, key string) (db.Account, error) {
	// Keyed by the hash, so neither the allow-list nor the cache holds a key in clear.
	hash := string(HashKey(key))
	if a.only != nil && !a.only[hash] {
		return db.Account{}, fmt.Errorf("authenticate key: %w", domain.ErrNotFound)
	}
	if a.cache == nil {
		return Authenticate(ctx, a.queries, key)
	}
	if acct, ok := a.cache.GetIfPresent(hash); ok {
		return acct, nil
	}
	acct, err := Authenticate(ctx, a.queries, key)
	if err != nil {
		return db.Account{}, err
	}
	a.cache.Set(hash, acct)
	return acct, nil
}
