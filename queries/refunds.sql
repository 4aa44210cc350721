-- name: RefundInsert :one
INSERT INTO refunds (id, account_id, payment_id, amount, currency, status, reason, metadata)
VALUES (@id, @account_id, @payment_id, @amount, @currency, 'succeeded', @reason, @metadata)
RETURNING *;

-- name: RefundGetByID :one
SELECT * FROM refunds
WHERE account_id = @account_id AND id = @id;

-- name: RefundList :many
-- Keyset pagination, as PaymentList.
SELECT * FROM refunds
WHERE account_id = @account_id
  AND (created_at, id) < (coalesce(sqlc.narg(after_created_at)::timestamptz, 'infinity'),
                          coalesce(sqlc.narg(after_id)::text, ''))
ORDER BY created_at DESC, id DESC
LIMIT @row_limit;

-- name: RefundListByPayment :many
-- RefundList for one payment: a query of its own rather than an optional filter, whose
-- generic plan could not use payment_id to find the rows and would read the account's.
SELECT * FROM refunds
WHERE account_id = @account_id AND payment_id = @payment_id
  AND (created_at, id) < (coalesce(sqlc.narg(after_created_at)::timestamptz, 'infinity'),
                          coalesce(sqlc.narg(after_id)::text, ''))
ORDER BY created_at DESC, id DESC
LIMIT @row_limit;
