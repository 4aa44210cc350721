package accounts_test

import (
	"context"
	"sync"
	"testing"

	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/internal/testing/integration"
)

// TestServersSeedingAtOnceAllStart is the cluster's start: several processes seed the same
// demo key at once, and each must start. The seeders are held at the api_keys table (a lock
// the test takes, which an INSERT waits for) until all of them wait, then let go together,
// so their inserts race past ON CONFLICT's check for the row the others are inserting.
func TestServersSeedingAtOnceAllStart(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.NewPool(t)
	ctx := context.Background()
	const seeders = 8
	const key = "sk_test_seeded_at_once"

	for round := range 5 { // each round a new key: five chances for the race to go wrong
		roundKey := key + string(rune('a'+round))
		hold, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := hold.Exec(ctx, `LOCK TABLE api_keys IN SHARE MODE`); err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, seeders)
		var wg sync.WaitGroup
		for range seeders {
			wg.Go(func() { errs <- accounts.SeedDemoKeys(ctx, db.New(pool), []string{roundKey}) })
		}
		integration.WaitFor(t, func() bool {
			return integration.Count(t, pool, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`) == seeders
		})
		if err := hold.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("round %d: a seeder failed: %v", round, err)
			}
		}
		var keys int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM api_keys WHERE key_hash = $1`, accounts.HashKey(roundKey)).Scan(&keys); err != nil {
			t.Fatal(err)
		}
		if keys != 1 {
			t.Errorf("round %d: %d rows for the key, want 1", round, keys)
		}
	}
}

// TestAKeysStoredPrefixGivesLittleAway: api_keys keeps a key's hash and a prefix to show. The
// prefix is at most a quarter of the key: of a short operator's key it leaves most of the key
// to guess, where its first 8 characters would leave one of "prodkey99".
func TestAKeysStoredPrefixGivesLittleAway(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.NewPool(t)
	ctx := context.Background()
	for key, want := range map[string]string{
		"prodkey99":                           "pr",
		"sk_test_demo":                        "sk_",
		"sk_test_0123456789ABCDEFGHIJKLMNOPQ": "sk_test_",
	} {
		if err := accounts.SeedDemoKeys(ctx, db.New(pool), []string{key}); err != nil {
			t.Fatal(err)
		}
		var prefix string
		if err := pool.QueryRow(ctx, `SELECT prefix FROM api_keys WHERE key_hash = $1`, accounts.HashKey(key)).Scan(&prefix); err != nil {
			t.Fatal(err)
		}
		if prefix != want {
			t.Errorf("%q is stored with the prefix %q, want %q", key, prefix, want)
		}
	}
}
