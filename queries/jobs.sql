-- name: JobInsert :one
INSERT INTO jobs (id, account_id, type, status, river_job_id)
VALUES (@id, @account_id, @type, 'queued', @river_job_id)
RETURNING *;

-- name: JobGetByID :one
SELECT * FROM jobs
WHERE account_id = @account_id AND id = @id;

-- name: JobList :many
-- Keyset pagination, as PaymentList.
SELECT * FROM jobs
WHERE account_id = @account_id
  AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status))
  AND (sqlc.narg(after_created_at)::timestamptz IS NULL
       OR (created_at, id) < (sqlc.narg(after_created_at), sqlc.narg(after_id)::text))
ORDER BY created_at DESC, id DESC
LIMIT @row_limit;

-- name: JobCancel :one
-- Cancels an unfinished job. The UPDATE waits for the row lock a worker holds while it
-- writes a page, so the worker's next page, which locks the row first, sees the cancel.
UPDATE jobs
SET status = 'canceled',
    finished_at = clock_timestamp(),
    expires_at = clock_timestamp() + make_interval(secs => @retention_seconds::float8)
WHERE account_id = @account_id AND id = @id AND status IN ('queued', 'running')
RETURNING *;

-- name: JobLockForWork :one
-- The worker's first statement in each of its transactions: the row lock orders it with
-- JobCancel, and the status it returns says whether to go on. NO KEY UPDATE, the lock an
-- UPDATE of non-key columns takes: it conflicts with JobCancel but not with the key-share
-- locks that inserting a chunk or a report (foreign keys to this row) takes.
SELECT * FROM jobs
WHERE id = @id
FOR NO KEY UPDATE;

-- name: JobStart :one
UPDATE jobs
SET status = 'running',
    started_at = coalesce(started_at, clock_timestamp())
WHERE id = @id
RETURNING *;

-- name: JobAddProgress :exec
UPDATE jobs
SET rows_processed = rows_processed + @rows
WHERE id = @id;

-- name: JobFinish :one
UPDATE jobs
SET status = @status,
    report_id = sqlc.narg(report_id),
    error_detail = sqlc.narg(error_detail),
    finished_at = clock_timestamp(),
    expires_at = clock_timestamp() + make_interval(secs => @retention_seconds::float8)
WHERE id = @id
RETURNING *;

-- name: JobDeleteExpired :execrows
-- Deletes one small batch of expired jobs; their requests, chunks and reports cascade.
DELETE FROM jobs
WHERE id IN (
    SELECT id FROM jobs
    WHERE expires_at <= now()
    LIMIT @batch_size
    FOR UPDATE SKIP LOCKED
);
