-- name: AccountGetByAPIKeyHash :one
-- The account of an active (not revoked) key.
SELECT accounts.*
FROM api_keys
JOIN accounts ON accounts.id = api_keys.account_id
WHERE api_keys.key_hash = @key_hash AND api_keys.revoked_at IS NULL;

-- name: AccountCreateIfMissing :exec
INSERT INTO accounts (id) VALUES (@id)
ON CONFLICT (id) DO NOTHING;

-- name: APIKeyCreateIfMissing :exec
INSERT INTO api_keys (id, account_id, key_hash, prefix)
VALUES (@id, @account_id, @key_hash, @prefix)
ON CONFLICT (key_hash) DO NOTHING;
