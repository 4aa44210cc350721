-- name: EventInsert :exec
INSERT INTO events (id, account_id, type, data)
VALUES (@id, @account_id, @type, @data);

-- name: EventGetByID :one
SELECT * FROM events
WHERE account_id = @account_id AND id = @id;

-- name: EventList :many
-- Keyset pagination, as PaymentList.
SELECT * FROM events
WHERE account_id = @account_id
  AND (sqlc.narg(after_created_at)::timestamptz IS NULL
       OR (created_at, id) < (sqlc.narg(after_created_at), sqlc.narg(after_id)::text))
ORDER BY created_at DESC, id DESC
LIMIT @row_limit;

-- name: EventListByType :many
-- EventList for one type, on events_account_type_created_idx (as RefundListByPayment).
SELECT * FROM events
WHERE account_id = @account_id AND type = @type
  AND (sqlc.narg(after_created_at)::timestamptz IS NULL
       OR (created_at, id) < (sqlc.narg(after_created_at), sqlc.narg(after_id)::text))
ORDER BY created_at DESC, id DESC
LIMIT @row_limit;
