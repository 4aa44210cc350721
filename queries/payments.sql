-- name: PaymentInsert :exec
-- A new payment, built whole by its caller, its times included (payments.Create): nothing
-- comes back that the caller does not already hold, so the insert can wait for the commit's
-- round trip (db.Tx.Later). The amount refunded and the version start at their defaults.
INSERT INTO payments (id, account_id, amount, currency, status, payment_method, failure_code, description, metadata, created_at, updated_at)
VALUES (@id, @account_id, @amount, @currency, @status, @payment_method, @failure_code, @description, @metadata, @created_at, @created_at);

-- name: PaymentGetByID :one
SELECT * FROM payments
WHERE account_id = @account_id AND id = @id;

-- name: PaymentVersion :one
-- The version alone, which is all a conditional read needs to answer 304.
SELECT version FROM payments
WHERE account_id = @account_id AND id = @id;

-- name: PaymentGetByIDs :many
-- Payments by id, each pair of @account_ids and @ids scoped as PaymentGetByID scopes one:
-- payments.Service sends the reads that arrive together as this one statement
-- (db.Coalescer), and a read that goes alone as PaymentGetByID, which PostgreSQL plans for
-- less (behind a transaction pooler it plans every statement it runs). A pair with no
-- payment has no row. Each pair is a lookup of the primary key
-- of its own: as a lateral subquery with OFFSET 0, which the planner cannot fold into a join,
-- it is an index lookup per pair whatever the statistics. Written as a join or
-- "(account_id, id) IN (...)", the plan the server's connections keep (plan_cache_mode =
-- force_generic_plan, internal/db/pool.go) was a hash join over the whole table when it was
-- made while the table was nearly empty (TestLookupPlansLeadWithTheirKeys).
SELECT p.* FROM
  (SELECT unnest(@account_ids::text[]) AS account_id, unnest(@ids::text[]) AS id) AS k,
  LATERAL (SELECT * FROM payments WHERE payments.account_id = k.account_id AND payments.id = k.id OFFSET 0) AS p;

-- name: PaymentVersions :many
-- PaymentVersion of several payments, as PaymentGetByIDs reads them.
SELECT p.account_id, p.id, p.version FROM
  (SELECT unnest(@account_ids::text[]) AS account_id, unnest(@ids::text[]) AS id) AS k,
  LATERAL (SELECT * FROM payments WHERE payments.account_id = k.account_id AND payments.id = k.id OFFSET 0) AS p;

-- name: PaymentList :many
-- Keyset pagination: rows strictly before the bound (created_at, id) in newest-first order,
-- so concurrent inserts never shift a page the way OFFSET would. The bound is the cursor or
-- created_lt, whichever comes first (payments.List picks it); with neither it is
-- (infinity, ''), after every row. created_gte is a bound too, (created_gte, ''), before
-- every row of that instant. No condition is optional ("@after IS NULL OR ..."): the server's
-- connections plan each statement once, without its values (plan_cache_mode =
-- force_generic_plan, internal/db/pool.go), and such a plan can only filter with an
-- optional condition, reading every row of the account before the page (10,000 rows deep,
-- 10,000 rows read for 10). As two row bounds the page is one index range, and the planner
-- weighs them as two guesses, not as one narrow range (see PaymentListByStatus).
SELECT * FROM payments
WHERE account_id = @account_id
  AND (created_at, id) >= (coalesce(sqlc.narg(created_gte)::timestamptz, '-infinity'), '')
  AND (created_at, id) < (coalesce(sqlc.narg(before_created_at)::timestamptz, 'infinity'),
                          coalesce(sqlc.narg(before_id)::text, ''))
ORDER BY created_at DESC, id DESC
LIMIT @row_limit;

-- name: PaymentListByStatus :many
-- PaymentList of the payments in one status, a range of payments_status_account_created_idx.
-- The bounds are written as PaymentList's on purpose: written as created_at >= ... AND
-- created_at < ..., the planner took them for one narrow range and estimated a single row
-- for the account's whole range too, so payments_account_created_idx (the account's rows,
-- filtered by status) cost it as little, and a generic plan made while a table of 7,500
-- payments had no statistics took it: 7,305 buffers for a page of a status none had.
SELECT * FROM payments
WHERE account_id = @account_id
  AND status = @status
  AND (created_at, id) >= (coalesce(sqlc.narg(created_gte)::timestamptz, '-infinity'), '')
  AND (created_at, id) < (coalesce(sqlc.narg(before_created_at)::timestamptz, 'infinity'),
                          coalesce(sqlc.narg(before_id)::text, ''))
ORDER BY created_at DESC, id DESC
LIMIT @row_limit;

-- name: PaymentUpdate :one
-- The If-Match check and the write are this one statement: WHERE version matches, or no row
-- is updated. There is no window between reading the version and writing.
-- Metadata is a JSON merge patch: merged key by key, null values remove keys.
-- A patch that would leave description and metadata as they are updates nothing either, so
-- the version, updated_at and the ETag stay: a no-op must not make other clients' tags stale.
UPDATE payments
SET description = CASE WHEN @set_description::boolean THEN sqlc.narg(description) ELSE description END,
    metadata = CASE WHEN @clear_metadata::boolean THEN '{}'::jsonb
                    ELSE jsonb_strip_nulls(metadata || @metadata_patch::jsonb) END,
    version = version + 1,
    updated_at = clock_timestamp()
WHERE account_id = @account_id
  AND id = @id
  AND (@any_version::boolean OR version = ANY (@versions::integer[]))
  AND (description, metadata) IS DISTINCT FROM (
        CASE WHEN @set_description::boolean THEN sqlc.narg(description) ELSE description END,
        CASE WHEN @clear_metadata::boolean THEN '{}'::jsonb
             ELSE jsonb_strip_nulls(metadata || @metadata_patch::jsonb) END)
RETURNING *;

-- name: PaymentGetForUpdate :one
-- Locks the payment until the transaction ends: concurrent refunds of one payment queue here
-- and each sees the amount_refunded its predecessor committed.
SELECT * FROM payments
WHERE account_id = @account_id AND id = @id
FOR UPDATE;

-- name: PaymentAddRefund :one
UPDATE payments
SET amount_refunded = amount_refunded + @amount,
    status = CASE WHEN amount_refunded + @amount = amount THEN 'refunded' ELSE 'partially_refunded' END,
    version = version + 1,
    updated_at = clock_timestamp()
WHERE account_id = @account_id AND id = @id
RETURNING *;
