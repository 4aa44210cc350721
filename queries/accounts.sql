-- name: AccountGetByAPIKeyHash :one
-- The account of an active (not revoked) key.
SELECT accounts.*
FROM api_keys
JOIN accounts ON accounts.id = api_keys.account_id
WHERE api_keys.key_hash = @key_hash AND api_keys.revoked_at IS NULL;

-- name: AccountCreateIfMissing :exec
INSERT INTO accounts (id) VALUES (@id)
ON CONFLICT (id) DO NOTHING;

-- name: AccountCreate :exec
-- A throwaway account, with the quotas it asked for in place of the server's (NULL: none).
INSERT INTO accounts (
    id,
    rate_limit_default_quota, rate_limit_default_window_seconds,
    rate_limit_writes_quota, rate_limit_writes_window_seconds
) VALUES (
    @id,
    sqlc.narg('rate_limit_default_quota'), sqlc.narg('rate_limit_default_window_seconds'),
    sqlc.narg('rate_limit_writes_quota'), sqlc.narg('rate_limit_writes_window_seconds')
);

-- name: APIKeyCreateIfMissing :execrows
-- The key's row, unless its hash has one: servers starting at once seed the same demo key, and
-- an insert that meets another's row (committed, or waited for until it commits) does nothing
-- and says so, 0 rows, so that its transaction rolls back the account it made for the key
-- (accounts.SeedDemoKeys).
INSERT INTO api_keys (id, account_id, key_hash, prefix)
VALUES (@id, @account_id, @key_hash, @prefix)
ON CONFLICT (key_hash) DO NOTHING;

-- Deleting an account locks, before the account's row, the rows that its requests and jobs
-- lock before they insert rows referencing the account: a refund locks its payment, and a
-- report's last page its job, before inserting the refund, the report and their events.
-- Those inserts take a key-share lock on the account's row through their foreign keys, so a
-- deletion that locked the account first and then waited for one of those rows would wait
-- for a transaction that waits for it: a deadlock, which PostgreSQL breaks by rolling one
-- back. In this order the deletion waits for them, or they for it. Each in id order, so two
-- deletions of one account take them in the same order. (A webhook attempt, recorded against
-- its locked delivery, inserts nothing that references the account.)

-- name: PaymentLockByAccount :exec
SELECT 1 FROM payments WHERE account_id = @account_id ORDER BY id FOR UPDATE;

-- name: JobLockByAccount :exec
SELECT 1 FROM jobs WHERE account_id = @account_id ORDER BY id FOR UPDATE;

-- name: AccountGetForUpdate :one
-- Locks the account row, after the rows above: requests of the account that have
-- inserted rows hold a key-share lock on it through their foreign keys, so the deletion
-- waits for them to commit, and new ones wait for the deletion (and then find no account).
-- A request whose rows all go with its COMMIT (a create) holds no such lock until then:
-- should the deletion commit first, that COMMIT fails on a foreign key, and the request
-- answers 401, having recorded nothing (db.IsAccountDeleted).
SELECT * FROM accounts WHERE id = @id FOR UPDATE;

-- name: AccountExists :one
-- Whether the account is still there. A request that waited for one of its account's rows
-- (a refund or an update for its payment's, a change to a webhook endpoint for the
-- endpoint's, a cancel for its job's) and then found none asks, to tell a row that never was
-- from one DELETE /account removed while the request waited: the deletion locks or deletes
-- those rows before it commits, so a request behind it finds them gone.
SELECT EXISTS (SELECT 1 FROM accounts WHERE id = @id);

-- Deleting an account: one statement per table, children before their parents, all in one
-- transaction. Every table with an account_id is here, or cascades from one that is (the
-- tests check that against the schema).

-- name: WebhookAttemptDeleteByAccount :exec
DELETE FROM webhook_attempts WHERE account_id = @account_id;

-- name: WebhookDeliveryDeleteByAccount :exec
DELETE FROM webhook_deliveries WHERE account_id = @account_id;

-- name: WebhookEndpointDeleteByAccount :exec
DELETE FROM webhook_endpoints WHERE account_id = @account_id;

-- name: ReportDeleteByAccount :exec
DELETE FROM reports WHERE account_id = @account_id;

-- name: JobDeleteByAccount :exec
-- Their report requests and chunks cascade. A build still queued in River finds no job and
-- cancels itself (see reports.lockForWork).
DELETE FROM jobs WHERE account_id = @account_id;

-- name: EventDeleteByAccount :exec
DELETE FROM events WHERE account_id = @account_id;

-- name: RefundDeleteByAccount :exec
DELETE FROM refunds WHERE account_id = @account_id;

-- name: PaymentDeleteByAccount :exec
DELETE FROM payments WHERE account_id = @account_id;

-- name: IdempotencyKeyDeleteByAccount :exec
DELETE FROM idempotency_keys WHERE account_id = @account_id;

-- name: APIKeyDeleteByAccount :exec
DELETE FROM api_keys WHERE account_id = @account_id;

-- name: AccountDelete :exec
DELETE FROM accounts WHERE id = @id;
