-- name: IdempotencyKeyLock :one
-- Takes the key's lock for the rest of the transaction, the operation's first statement.
-- pg_try_advisory_xact_lock answers at once: false means another transaction holds it, so
-- the key's first use is still running (or another retry is reading the key), and unless
-- IdempotencyKeyGet finds the key used, the caller answers 409. The lock is a hash of the
-- key: a collision can only cause a false 409, never a second effect, because the key's row
-- is written with a plain INSERT, which its primary key refuses a second time.
SELECT pg_try_advisory_xact_lock(hashtextextended(@lock_key::text, 0)) AS acquired;

-- name: IdempotencyKeyInFlight :one
-- Whether the key's first use is still running, as IdempotencyKeyLock and IdempotencyKeyGet
-- would tell a claim: a transaction holds the key's lock and no use of it has committed (a
-- retry reading a used key holds the lock too, and is answered with a replay). The lock is
-- read from pg_locks without taking it: taking it, even for an instant, could answer a claim
-- made in that instant with a 409 for a request nobody runs. An advisory lock on a bigint
-- shows there with its high and low 32 bits in classid and objid, and objsubid 1.
SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks
    WHERE locktype = 'advisory' AND objsubid = 1 AND granted
      AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
      AND classid = oid((hashtextextended(@lock_key::text, 0) >> 32) & 4294967295)
      AND objid = oid(hashtextextended(@lock_key::text, 0) & 4294967295)
      AND NOT EXISTS (
          SELECT 1 FROM idempotency_keys
          WHERE account_id = @account_id AND operation = @operation AND key = @key AND expires_at > now()
      )
) AS in_flight;

-- name: IdempotencyKeyGet :many
-- The key's row, if it has one: sent right after IdempotencyKeyLock, in the same round trip
-- (db.IdempotencyKeyAhead). Under READ COMMITTED a statement reads what had committed when it
-- started, and this one starts once the lock is answered, so it sees every use of the key
-- that committed before the lock was free. A row is only ever written whole, response
-- included (IdempotencyKeyInsert), so a row found is a use that completed.
SELECT fingerprint, response_status, response_headers, response_body, expires_at,
       expires_at <= now() AS expired
FROM idempotency_keys
WHERE account_id = @account_id AND operation = @operation AND key = @key;

-- name: IdempotencyKeyInsert :exec
-- Records the key's use, its response with it, in the operation's own transaction: queued
-- with its COMMIT (Tx.Later). One write, of a row nobody has seen yet, where claiming the row
-- first and storing the response later writes it twice. A plain INSERT: should a row of the
-- key exist, it fails, and the operation's effect rolls back with it. The TTL runs from now,
-- as the row is written (clock_timestamp), not from the transaction's start (now()): an
-- operation that ran longer than the TTL would otherwise commit a row already expired, and
-- the retry it answers would run the operation a second time.
INSERT INTO idempotency_keys (account_id, operation, key, fingerprint, response_status, response_headers, response_body, expires_at)
VALUES (@account_id, @operation, @key, @fingerprint, @response_status, @response_headers, @response_body,
        clock_timestamp() + make_interval(secs => @ttl_seconds::float8));

-- name: IdempotencyKeyDeleteIfExpired :exec
-- Makes way for a new use of an expired key: queued before its IdempotencyKeyInsert, only
-- when IdempotencyKeyGet found the key expired. An unexpired row stays, and the insert fails.
DELETE FROM idempotency_keys
WHERE account_id = @account_id AND operation = @operation AND key = @key AND expires_at <= now();

-- name: IdempotencyKeyDeleteExpired :execrows
-- Deletes one small batch of expired keys, those that expired first, found through
-- idempotency_keys_expires_at_idx (unordered, a plan could scan the table for them, reading
-- every live key before the expired ones). SKIP LOCKED passes over rows another transaction
-- holds. A claim takes an expired key over only in its commit's batch, so the sweep may delete
-- the row first: the claim's IdempotencyKeyDeleteIfExpired then deletes nothing, and its
-- INSERT goes ahead.
DELETE FROM idempotency_keys
WHERE (account_id, operation, key) IN (
    SELECT account_id, operation, key
    FROM idempotency_keys
    WHERE expires_at <= now()
    ORDER BY expires_at
    LIMIT @batch_size
    FOR UPDATE SKIP LOCKED
);

-- name: IdempotencyKeyExpireByAccount :execrows
-- A test helper: every key of the account expires now, as if its TTL had passed.
UPDATE idempotency_keys SET expires_at = now()
WHERE account_id = @account_id AND expires_at > now();

-- name: IdempotencyKeyInsertExpired :execrows
-- A load fixture (payments-load -sweep-keys): @n keys of the account that expired a minute
-- ago, each with a stored response of a payment's size, for the sweep to delete. One
-- statement, so a million keys take seconds rather than a million round trips.
INSERT INTO idempotency_keys (account_id, operation, key, fingerprint, response_status, response_headers, response_body, expires_at)
SELECT @account_id, 'load.sweep', @key_prefix::text || g, '\x00', 201,
       '{"Content-Type":"application/json"}', convert_to(repeat('x', 450), 'UTF8'), now() - interval '1 minute'
FROM generate_series(1, @n::int) g;
