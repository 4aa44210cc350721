-- The floor's statements: cmd/payments-load/minimal, the naive server the performance runs
-- measure this one against (docs/performance.md). Nothing in the server runs them; they stay
-- apart so that queries/idempotency.sql shows one way to claim a key, the server's.

-- name: IdempotencyKeyClaim :one
-- The floor's claim (cmd/payments-load/minimal), the way a naive server claims a key: it
-- inserts the key's row first, in the claim, and stores the response in that row at the end
-- (IdempotencyKeySaveResponse), so every use writes the row twice. The server writes it once
-- (IdempotencyKeyLock, IdempotencyKeyGet, IdempotencyKeyInsert).
--   * pg_try_advisory_xact_lock answers at once: false, and the key is in flight.
--   * With the lock held, INSERT ... ON CONFLICT cannot meet an uncommitted row for this
--     key, so it never blocks. claimed = false means a committed row exists.
--   * An expired row is taken over as if it were new.
--   * The key's committed, unexpired row comes back with the claim, from the statement's
--     snapshot.
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

-- name: IdempotencyKeySaveResponse :exec
-- The floor's second write of its key's row: the response, stored at the end of the
-- transaction that claimed it (IdempotencyKeyClaim).
UPDATE idempotency_keys
SET response_status = @response_status,
    response_headers = @response_headers,
    response_body = @response_body
WHERE account_id = @account_id AND operation = @operation AND key = @key;
