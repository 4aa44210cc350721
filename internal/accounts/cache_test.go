package accounts_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

const testKey = "sk_test_accounts_cache"

func setup(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, _ := dbtest.NewPool(t)
	if err := accounts.SeedDemoKeys(context.Background(), pool, []string{testKey}); err != nil {
		t.Fatal(err)
	}
	return pool
}

func revoke(t *testing.T, pool *pgxpool.Pool, key string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `UPDATE api_keys SET revoked_at = now() WHERE key_hash = $1`, accounts.HashKey(key)); err != nil {
		t.Fatal(err)
	}
}

// TestRevokedKeyWorksUntilTheCacheForgetsIt is the documented price of the cache: a key
// revoked after a lookup keeps working for up to the TTL, then is refused. The TTL runs from
// the lookup, not the last use: the test keeps using the key, as a client holding a stolen
// key would, and it still stops working.
func TestRevokedKeyWorksUntilTheCacheForgetsIt(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	const ttl = 200 * time.Millisecond
	auth, err := accounts.NewAuthenticator(db.New(pool), 10, ttl)
	if err != nil {
		t.Fatal(err)
	}
	want, err := auth.Authenticate(ctx, testKey)
	if err != nil {
		t.Fatal(err)
	}
	revoke(t, pool, testKey)

	got, err := auth.Authenticate(ctx, testKey)
	if err != nil || got.ID != want.ID {
		t.Fatalf("within the TTL: %+v, %v; want the cached account %s", got, err, want.ID)
	}
	for deadline := time.Now().Add(3 * ttl); ; time.Sleep(ttl / 8) {
		_, err := auth.Authenticate(ctx, testKey)
		if errors.Is(err, domain.ErrNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("used every %s, the revoked key still works %s after its lookup (TTL %s): %v", ttl/8, 3*ttl, ttl, err)
		}
	}
}

// TestZeroTTLLooksUpEveryTime: with the cache off, a revoked key is refused at once.
func TestZeroTTLLooksUpEveryTime(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	auth, err := accounts.NewAuthenticator(db.New(pool), 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Authenticate(ctx, testKey); err != nil {
		t.Fatal(err)
	}
	revoke(t, pool, testKey)
	if _, err := auth.Authenticate(ctx, testKey); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("revoked key: %v, want ErrNotFound", err)
	}
}

// TestUnknownKeysAreNotRemembered: a refusal is not cached, so a key created after a failed
// attempt works at once.
func TestUnknownKeysAreNotRemembered(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	auth, err := accounts.NewAuthenticator(db.New(pool), 10, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	const newKey = "sk_test_created_later"
	if _, err := auth.Authenticate(ctx, newKey); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("unknown key: %v, want ErrNotFound", err)
	}
	if err := accounts.SeedDemoKeys(ctx, pool, []string{newKey}); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Authenticate(ctx, newKey); err != nil {
		t.Errorf("key created after a refusal: %v", err)
	}
}

// TestOnlyKeysRefusesEveryOtherKey: an authenticator limited to some keys refuses an active
// key of the database that it does not name, with or without its cache, and even after the
// unrestricted authenticator it was made from has cached that key.
func TestOnlyKeysRefusesEveryOtherKey(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	const named = "sk_live_named_key"
	if err := accounts.SeedDemoKeys(ctx, pool, []string{named}); err != nil {
		t.Fatal(err)
	}
	for _, ttl := range []time.Duration{0, time.Hour} {
		all, err := accounts.NewAuthenticator(db.New(pool), 10, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := all.Authenticate(ctx, testKey); err != nil {
			t.Fatalf("unrestricted, ttl %s: %v", ttl, err)
		}
		only := all.OnlyKeys([]string{named})
		if _, err := only.Authenticate(ctx, testKey); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("ttl %s: a key OnlyKeys does not name: %v, want ErrNotFound", ttl, err)
		}
		if _, err := only.Authenticate(ctx, named); err != nil {
			t.Errorf("ttl %s: the named key: %v", ttl, err)
		}
		if _, err := all.Authenticate(ctx, testKey); err != nil {
			t.Errorf("ttl %s: OnlyKeys changed the authenticator it was made from: %v", ttl, err)
		}
	}
}
