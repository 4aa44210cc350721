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
-- the account's jobs and hash them. An expired report is gone at once, not when the sweep
-- reaches it: the sweep deletes its chunks a batch at a time before the report itself, and a
-- download started meanwhile would stop short.
SELECT sqlc.embed(reports),
       (SELECT jobs.expires_at FROM jobs WHERE jobs.account_id = reports.account_id AND jobs.id = reports.job_id)
FROM reports
WHERE reports.account_id = @account_id AND reports.id = @id
  AND (SELECT jobs.expires_at FROM jobs WHERE jobs.account_id = reports.account_id AND jobs.id = reports.job_id) > now();

-- name: PaymentReportPage :many
-- One page of a payments report: oldest first, strictly after the cursor (created_at, id).
-- The first page's cursor is (created_gte, ''), before every row of the range. The cursor is
-- never optional (no "@after IS NULL OR ..."): the plan PostgreSQL caches for a prepared
-- statement cannot use an optional condition to start the index scan, so every page would
-- scan the range from its start and filter out the pages before it, and a build would take
-- time quadratic in its rows.
SELECT * FROM payments
WHERE account_id = @account_id
  AND created_at >= @created_gte AND created_at < @created_lt
  AND (created_at, id) > (@after_created_at::timestamptz, @after_id::text)
ORDER BY created_at, id
LIMIT @row_limit;

-- name: RefundReportPage :many
-- One page of a refunds report, as PaymentReportPage.
SELECT * FROM refunds
WHERE account_id = @account_id
  AND created_at >= @created_gte AND created_at < @created_lt
  AND (created_at, id) > (@after_created_at::timestamptz, @after_id::text)
ORDER BY created_at, id
LIMIT @row_limit;
