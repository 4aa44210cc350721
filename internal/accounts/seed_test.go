package accounts_test

import (
	"context"
	"encoding/base32"
	"strings"
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
			wg.Go(func() { errs <- accounts.SeedDemoKeys(ctx, pool, []string{roundKey}) })
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
		// The seeders whose key came second rolled back the account each made for it.
		if n := integration.Count(t, pool, `SELECT count(*) FROM accounts`); n != round+1 {
			t.Errorf("round %d: %d accounts after seeding %d keys", round, n, round+1)
		}
	}
}

// TestASeededAccountsIdSaysNothingOfItsKey: every request's log line names its account, so
// the id of a demo key's account is random, not derived from the key, where whoever read the
// logs could test guesses at the key against it. Seeding again keeps the account.
func TestASeededAccountsIdSaysNothingOfItsKey(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.NewPool(t)
	ctx := context.Background()
	const key = "sk_live_operator"
	ids := map[string]bool{}
	for range 2 {
		if err := accounts.SeedDemoKeys(ctx, pool, []string{key}); err != nil {
			t.Fatal(err)
		}
		acct, err := accounts.Authenticate(ctx, db.New(pool), key)
		if err != nil {
			t.Fatal(err)
		}
		ids[acct.ID] = true
	}
	if len(ids) != 1 {
		t.Fatalf("seeding the key twice gave it the accounts %v", ids)
	}
	hash := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(accounts.HashKey(key))
	for id := range ids {
		if strings.Contains(hash, strings.TrimPrefix(id, "acct_")[:8]) {
			t.Errorf("the account %s is named after its key's hash %s", id, hash)
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
		if err := accounts.SeedDemoKeys(ctx, pool, []string{key}); err != nil {
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
