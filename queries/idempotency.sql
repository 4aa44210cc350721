-- name: IdempotencyKeyClaim :one
-- Claims a key as the first statement of the operation's transaction, without ever waiting:
--   * pg_try_advisory_xact_lock answers at once. If another transaction holds the lock for
--     this key, that request is in flight: acquired = false, and the caller answers 409.
--   * With the lock held, INSERT ... ON CONFLICT cannot meet an uncommitted row for this
--     key (its writer would hold the lock), so it never blocks either. claimed = false
--     means a committed row exists: the caller replays it or answers 422.
--   * An expired row is taken over as if it were new.
--   * The key's committed, unexpired row comes back with the claim, so a replay needs no
--     second statement. It is read from the statement's snapshot: a row committed after
--     that (by the lock's previous holder) is not in it, and the caller reads again.
-- The lock is a hash: a collision can only cause a false 409, never a double effect,
-- because the primary key still guards the row. Both end with the transaction.
WITH lock AS (
    SELECT pg_try_advisory_xact_lock(hashtextextended(@lock_key::text, 0)) AS acquired
), claimed AS (
    INSERT INTO idempotency_keys (account_id, operation, key, fingerprint, expires_at)
    SELECT @account_id, @operation, @key, @fingerprint, now() + make_interval(secs => @ttl_seconds::float8)
    FROM lock
    WHERE lock.acquired
    ON CONFLICT (account_id, operation, key) DO UPDATE
        SET fingerprint = excluded.fingerprint,
            response_status = NULL,
            response_headers = NULL,
            response_body = NULL,
            created_at = now(),
            expires_at = excluded.expires_at
        WHERE idempotency_keys.expires_at <= now()
    RETURNING 1
)
SELECT lock.acquired, EXISTS (SELECT 1 FROM claimed) AS claimed,
       used.fingerprint, used.response_status, used.response_headers, used.response_body
FROM lock
LEFT JOIN idempotency_keys used
    ON used.account_id = @account_id AND used.operation = @operation AND used.key = @key
    AND used.expires_at > now();

-- name: IdempotencyKeyGetCompleted :one
-- A committed, unexpired key and its response. Rows are only ever visible committed (with
-- their response), so no row here means the key is free or its first use is still running.
SELECT * FROM idempotency_keys
WHERE account_id = @account_id AND operation = @operation AND key = @key
  AND expires_at > now();

-- name: IdempotencyKeySaveResponse :exec
UPDATE idempotency_keys
SET response_status = @response_status,
    response_headers = @response_headers,
    response_body = @response_body
WHERE account_id = @account_id AND operation = @operation AND key = @key;

-- name: IdempotencyKeyDeleteExpired :execrows
-- Deletes one small batch of expired keys, those that expired first, found through
-- idempotency_keys_expires_at_idx (unordered, a plan could scan the table for them, reading
-- every live key before the expired ones); SKIP LOCKED leaves rows a claim is taking over.
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
