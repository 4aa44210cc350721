-- name: ReportRequestInsert :exec
INSERT INTO report_requests (account_id, job_id, type, format, created_gte, created_lt)
VALUES (@account_id, @job_id, @type, @format, @created_gte, @created_lt);

-- name: ReportRequestGet :one
SELECT * FROM report_requests
WHERE account_id = @account_id AND job_id = @job_id;

-- name: ReportRequestAdvance :exec
-- Records a written page: its last row becomes the cursor.
UPDATE report_requests
SET cursor_created_at = @cursor_created_at,
    cursor_id = @cursor_id,
    chunks = chunks + 1,
    bytes = bytes + @bytes
WHERE account_id = @account_id AND job_id = @job_id;

-- name: ReportChunkInsert :exec
INSERT INTO report_chunks (account_id, job_id, seq, data)
VALUES (@account_id, @job_id, @seq, @data);

-- name: ReportChunkGet :one
SELECT data FROM report_chunks
WHERE account_id = @account_id AND job_id = @job_id AND seq = @seq;

-- name: ReportInsert :one
INSERT INTO reports (id, account_id, job_id, type, format, created_gte, created_lt, row_count, byte_size, chunks)
VALUES (@id, @account_id, @job_id, @type, @format, @created_gte, @created_lt, @row_count, @byte_size, @chunks)
RETURNING *;

-- name: ReportGetByID :one
-- A report and when it expires (with its job). The job is read by a subquery, one row by its
-- key: joined, the account_id = @account_id both tables share lets a generic plan read all
-- the account's jobs and hash them.
SELECT sqlc.embed(reports),
       (SELECT jobs.expires_at FROM jobs WHERE jobs.account_id = reports.account_id AND jobs.id = reports.job_id)
FROM reports
WHERE reports.account_id = @account_id AND reports.id = @id;

-- name: PaymentReportPage :many
-- One page of a payments report: oldest first, strictly after the cursor (created_at, id).
SELECT * FROM payments
WHERE account_id = @account_id
  AND created_at >= @created_gte AND created_at < @created_lt
  AND (sqlc.narg(after_created_at)::timestamptz IS NULL
       OR (created_at, id) > (sqlc.narg(after_created_at), sqlc.narg(after_id)::text))
ORDER BY created_at, id
LIMIT @row_limit;

-- name: RefundReportPage :many
-- One page of a refunds report, as PaymentReportPage.
SELECT * FROM refunds
WHERE account_id = @account_id
  AND created_at >= @created_gte AND created_at < @created_lt
  AND (sqlc.narg(after_created_at)::timestamptz IS NULL
       OR (created_at, id) > (sqlc.narg(after_created_at), sqlc.narg(after_id)::text))
ORDER BY created_at, id
LIMIT @row_limit;
