package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// setupStore is a store with a TTL of one hour on a fresh database with one account, whose
// id it returns.
func setupStore(t *testing.T) (*idempotency.Store, *pgxpool.Pool, string) {
	t.Helper()
	pool, _ := dbtest.NewPool(t)
	return idempotency.NewStore(pool, time.Hour), pool, seedAccount(t, pool)
}

// seedAccount adds one account to pool's database and returns its id.
func seedAccount(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	ctx := context.Background()
	const key = "sk_test_idempotency_store"
	if err := accounts.SeedDemoKeys(ctx, pool, []string{key}); err != nil {
		t.Fatal(err)
	}
	acct, err := accounts.Authenticate(ctx, db.New(pool), key)
	if err != nil {
		t.Fatal(err)
	}
	return acct.ID
}

// bounded is the test's context with a deadline, for the store's calls: a claim that waits on
// a lock it should not fails its test instead of hanging the package.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSweepDeletesExpiredKeysInBatches(t *testing.T) {
	t.Parallel()
	store, pool, accountID := setupStore(t)
	ctx := context.Background()
	const expired, fresh = 1200, 5 // more expired keys than one sweep batch deletes

	if _, err := pool.Exec(ctx, `
		INSERT INTO idempotency_keys (account_id, operation, key, fingerprint, response_status, expires_at)
		SELECT $1, 'payments.create', 'expired-' || g, '\x00', 201, now() - interval '1 minute'
		FROM generate_series(1, $2::int) g`, accountID, expired); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO idempotency_keys (account_id, operation, key, fingerprint, response_status, expires_at)
		SELECT $1, 'payments.create', 'fresh-' || g, '\x00', 201, now() + interval '1 hour'
		FROM generate_series(1, $2::int) g`, accountID, fresh); err != nil {
		t.Fatal(err)
	}

	n, err := store.Sweep(ctx)
	if err != nil || n != expired {
		t.Fatalf("Sweep = %d, %v; want %d", n, err, expired)
	}
	var left, leftFresh int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE key LIKE 'fresh-%') FROM idempotency_keys`).Scan(&left, &leftFresh); err != nil {
		t.Fatal(err)
	}
	if left != fresh || leftFresh != fresh {
		t.Errorf("%d keys left (%d fresh), want only the %d fresh ones", left, leftFresh, fresh)
	}
	if n, err := store.Sweep(ctx); err != nil || n != 0 {
		t.Errorf("second Sweep = %d, %v; want 0", n, err)
	}
}

// TestExpiredKeyCanBeReused: within its TTL a key replays or refuses another body; once
// expired it is claimed afresh, so the operation runs again with the new request.
func TestExpiredKeyCanBeReused(t *testing.T) {
	t.Parallel()
	store, pool, accountID := setupStore(t)
	ctx := bounded(t)

	request := func(body string) idempotency.Request {
		t.Helper()
		req, err := idempotency.NewRequest(accountID, "payments.create", "key-K", decode(t, body))
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	first, second := request(`{"amount":100}`), request(`{"amount":200}`)
	var calls int
	op := func(body string) func(db.Tx) (idempotency.Response, error) {
		return func(db.Tx) (idempotency.Response, error) {
			calls++
			return idempotency.Response{Status: 201, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte(body)}, nil
		}
	}

	res, err := store.Do(ctx, first, op(`{"run":1}`))
	if err != nil || res.Replayed || calls != 1 {
		t.Fatalf("first use: %+v, %v, %d calls", res, err, calls)
	}
	res, err = store.Do(ctx, first, op(`{"run":"never"}`))
	if err != nil || !res.Replayed || string(res.Body) != `{"run":1}` || calls != 1 {
		t.Fatalf("replay within the TTL: %+v, %v, %d calls", res, err, calls)
	}
	if _, err := store.Do(ctx, second, op(`{"run":"never"}`)); !errors.Is(err, domain.ErrIdempotencyKeyReused) || calls != 1 {
		t.Fatalf("another body within the TTL: %v, %d calls; want ErrIdempotencyKeyReused", err, calls)
	}

	if _, err := pool.Exec(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = 'key-K'`); err != nil {
		t.Fatal(err)
	}
	res, err = store.Do(ctx, second, op(`{"run":2}`))
	if err != nil || res.Replayed || string(res.Body) != `{"run":2}` || calls != 2 {
		t.Fatalf("after expiry: %+v, %v, %d calls; want the operation to run again", res, err, calls)
	}

	rows, err := db.New(pool).IdempotencyKeyGet(ctx, db.IdempotencyKeyGetParams{AccountID: accountID, Operation: "payments.create", Key: "key-K"})
	if err != nil || len(rows) != 1 {
		t.Fatalf("the key's rows: %d, %v; want 1", len(rows), err)
	}
	row := rows[0]
	if !bytes.Equal(row.Fingerprint, second.Fingerprint) || string(row.ResponseBody) != `{"run":2}` {
		t.Errorf("the row keeps the old request: body %s", row.ResponseBody)
	}
	if ttl := time.Until(row.ExpiresAt); ttl < 59*time.Minute || ttl > time.Hour {
		t.Errorf("the reused key expires in %v, want a fresh TTL of 1h", ttl)
	}
	res, err = store.Do(ctx, second, op(`{"run":"never"}`))
	if err != nil || !res.Replayed || string(res.Body) != `{"run":2}` || calls != 2 {
		t.Errorf("replay of the new use: %+v, %v, %d calls", res, err, calls)
	}
}

// TestAKeyOutlivesAnOperationLongerThanItsTTL: a key is remembered for its TTL from when its
// use is recorded, so an operation that ran longer than the TTL is still replayed to the retry
// it answers, not run a second time.
func TestAKeyOutlivesAnOperationLongerThanItsTTL(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.NewPool(t)
	const ttl = time.Second
	store, accountID, ctx := idempotency.NewStore(pool, ttl), seedAccount(t, pool), bounded(t)
	req, err := idempotency.NewRequest(accountID, "payments.create", "key-slow", decode(t, `{"amount":100}`))
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	op := func(db.Tx) (idempotency.Response, error) {
		calls++
		time.Sleep(ttl + 200*time.Millisecond) // the transaction began longer ago than the TTL
		return idempotency.Response{Status: 201, Body: []byte(`{"run":1}`)}, nil
	}
	if _, err := store.Do(ctx, req, op); err != nil {
		t.Fatal(err)
	}
	res, err := store.Do(ctx, req, op)
	if err != nil || !res.Replayed || calls != 1 {
		t.Errorf("the retry of an operation longer than the TTL: %+v, %v, %d calls; want a replay", res, err, calls)
	}
}

// TestTheKeysRowRefusesASecondEffect: the key's lock keeps a second use of a key from
// running while the first does, and behind it the key's primary key refuses a second row.
// Here a use of the key commits while the operation runs, written straight to the table as
// if it had got past the lock, so the operation's own row is the second. Its transaction
// must fail, and the operation's effect roll back with it.
func TestTheKeysRowRefusesASecondEffect(t *testing.T) {
	t.Parallel()
	store, pool, accountID := setupStore(t)
	ctx := bounded(t)
	req, err := idempotency.NewRequest(accountID, "payments.create", "key-raced", decode(t, `{"amount":100}`))
	if err != nil {
		t.Fatal(err)
	}
	op := func(tx db.Tx) (idempotency.Response, error) {
		status := int32(201)
		if err := db.New(pool).IdempotencyKeyInsert(ctx, db.IdempotencyKeyInsertParams{ // another connection: commits now
			AccountID: accountID, Operation: req.Operation, Key: req.Key, Fingerprint: req.Fingerprint,
			ResponseStatus: &status, ResponseHeaders: []byte(`{}`), ResponseBody: []byte(`{"id":"other"}`), TtlSeconds: 60,
		}); err != nil {
			return idempotency.Response{}, err
		}
		err := tx.Later.EventInsert(ctx, db.EventInsertParams{ID: "evt_raced", AccountID: accountID, Type: "payment.succeeded", Data: []byte(`{}`)})
		return idempotency.Response{Status: 201, Body: []byte(`{"id":"second"}`)}, err
	}
	if _, err := store.Do(ctx, req, op); err == nil {
		t.Error("a second row of the key committed")
	}
	var events int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE id = 'evt_raced'`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != 0 {
		t.Error("the second use's effect committed beside the first use's row")
	}
	res, err := store.Do(ctx, req, op)
	if err != nil || !res.Replayed || string(res.Body) != `{"id":"other"}` {
		t.Errorf("a retry: %+v, %v; want the first use's response", res, err)
	}
}

// TestConcurrentReplaysOfACompletedKey retries one completed key from many goroutines at
// once: the operation never runs again, and every retry is a replay of the stored response,
// even when it meets another retry holding the key's lock (never "in flight" for a request
// that finished).
func TestConcurrentReplaysOfACompletedKey(t *testing.T) {
	t.Parallel()
	store, _, accountID := setupStore(t)
	ctx := bounded(t)
	req, err := idempotency.NewRequest(accountID, "payments.create", "key-replayed", decode(t, `{"amount":100}`))
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	op := func(db.Tx) (idempotency.Response, error) {
		calls.Add(1)
		return idempotency.Response{Status: 201, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"id":"once"}`)}, nil
	}
	if _, err := store.Do(ctx, req, op); err != nil {
		t.Fatal(err)
	}

	const clients, retries = 8, 25
	var replays, inUse atomic.Int32
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range retries {
				res, err := store.Do(ctx, req, op)
				switch {
				case errors.Is(err, domain.ErrIdempotencyKeyInUse):
					inUse.Add(1)
				case err != nil:
					t.Errorf("retry: %v", err)
				case !res.Replayed || string(res.Body) != `{"id":"once"}`:
					t.Errorf("retry answered %+v, want the stored response", res)
				default:
					replays.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Fatalf("the operation ran %d times, want once", n)
	}
	if n := inUse.Load(); n > 0 {
		t.Errorf("%d of %d retries of a completed key were refused as in flight (%d replayed)",
			n, clients*retries, replays.Load())
	}
}

// TestAReplayIsAnsweredFromTheClaim: the key's row comes back with its lock, so a replay
// costs two round trips: BEGIN with the lock and the row, then COMMIT; no read after them.
func TestAReplayIsAnsweredFromTheClaim(t *testing.T) {
	t.Parallel()
	pool, roundTrips := dbtest.NewCountedPool(t) // its one connection ran the first use: every statement is prepared
	store := idempotency.NewStore(pool, time.Hour)
	ctx := bounded(t)
	req, err := idempotency.NewRequest(seedAccount(t, pool), "payments.create", "key-counted", decode(t, `{"amount":100}`))
	if err != nil {
		t.Fatal(err)
	}
	op := func(db.Tx) (idempotency.Response, error) {
		return idempotency.Response{Status: 201, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"id":"once"}`)}, nil
	}
	if _, err := store.Do(ctx, req, op); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Do(ctx, req, op); err != nil { // a replay, so its own statements are prepared too
		t.Fatal(err)
	}
	roundTrips.Reset()
	res, err := store.Do(ctx, req, op)
	if err != nil || !res.Replayed || string(res.Body) != `{"id":"once"}` {
		t.Fatalf("replay: %+v, %v", res, err)
	}
	if n := roundTrips.Count(); n != 2 {
		t.Errorf("a replay took %d round trips, want 2: BEGIN with the lock and the row, COMMIT", n)
	}
}

// decode is a body as the contract hands it to NewRequest.
func decode(t *testing.T, body string) any {
	t.Helper()
	v, err := idempotency.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestIdempotencyKeyInFlightReadsTheClaimsLock: the question Store.Enter asks when its gate
// is full (IdempotencyKeyInFlight) sees the lock a claim holds (IdempotencyKeyLock) from
// another connection, and only that key's, whether the lock's 64-bit hash is negative or not
// (its halves are read from pg_locks' two 32-bit columns), and no longer once the claim ends.
// A key whose use committed is not in flight, though a retry reading it holds its lock.
func TestIdempotencyKeyInFlightReadsTheClaimsLock(t *testing.T) {
	t.Parallel()
	store, pool, accountID := setupStore(t)
	ctx := bounded(t)
	q := db.New(pool)
	inFlight := func(key string) bool {
		t.Helper()
		held, err := q.IdempotencyKeyInFlight(ctx, db.IdempotencyKeyInFlightParams{
			LockKey: accountID + "|op|" + key, AccountID: accountID, Operation: "op", Key: key,
		})
		if err != nil {
			t.Fatal(err)
		}
		return held
	}
	claim := func(key string) pgx.Tx {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if acquired, err := db.New(tx).IdempotencyKeyLock(ctx, accountID+"|op|"+key); err != nil || !acquired {
			t.Fatalf("claim %s: %v %v", key, acquired, err)
		}
		return tx
	}
	signs := map[bool]int{} // keys tried, by whether their lock's hash is negative
	for i := 0; signs[true] < 2 || signs[false] < 2; i++ {
		key := fmt.Sprintf("key-%d", i)
		var negative bool
		if err := pool.QueryRow(ctx, `SELECT hashtextextended($1, 0) < 0`, accountID+"|op|"+key).Scan(&negative); err != nil {
			t.Fatal(err)
		}
		signs[negative]++
		tx := claim(key)
		if !inFlight(key) || inFlight(key+"-other") {
			t.Errorf("%s (hash negative %v) claimed: in flight %v, another key %v", key, negative, inFlight(key), inFlight(key+"-other"))
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if inFlight(key) {
			t.Errorf("%s in flight after its claim ended", key)
		}
	}

	req, err := idempotency.NewRequest(accountID, "op", "used", decode(t, `{}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Do(ctx, req, func(db.Tx) (idempotency.Response, error) { return idempotency.Response{Status: 201}, nil }); err != nil {
		t.Fatal(err)
	}
	tx := claim("used") // a retry reading the used key
	defer func() { _ = tx.Rollback(ctx) }()
	if inFlight("used") {
		t.Error("a used key whose lock a retry holds is in flight")
	}
}
