-- name: JobInsert :one
INSERT INTO jobs (id, account_id, type, status, river_job_id)
VALUES (@id, @account_id, @type, 'queued', @river_job_id)
RETURNING *;

-- name: JobGetByID :one
SELECT * FROM jobs
WHERE account_id = @account_id AND id = @id;

-- name: JobList :many
-- Keyset pagination, as PaymentList, and like it without the status filter, which is
-- JobListByStatus's.
SELECT * FROM jobs
WHERE account_id = @account_id
  AND (created_at, id) < (coalesce(sqlc.narg(after_created_at)::timestamptz, 'infinity'),
                          coalesce(sqlc.narg(after_id)::text, ''))
ORDER BY created_at DESC, id DESC
LIMIT @row_limit;

-- name: JobListByStatus :many
-- JobList of the jobs in one status, a range of jobs_status_account_created_idx.
SELECT * FROM jobs
WHERE account_id = @account_id
  AND status = @status
  AND (created_at, id) < (coalesce(sqlc.narg(after_created_at)::timestamptz, 'infinity'),
                          coalesce(sqlc.narg(after_id)::text, ''))
ORDER BY created_at DESC, id DESC
LIMIT @row_limit;

-- name: JobLock :exec
-- Serialises the transactions that change one job: each step of its build, and its cancel.
-- Every such transaction takes this lock first, and waits its turn: waiters for an advisory
-- lock are served in order. A row lock alone does not promise that: when its holder updates
-- the row, a waiter must lock the new row version, and the worker's next transaction can
-- take it first, so a fast worker could write page after page ahead of a waiting cancel.
SELECT pg_advisory_xact_lock(hashtextextended('job|' || @id::text, 0));

-- name: JobCancel :one
-- Cancels an unfinished job, after JobLock: a worker's step in progress finishes first, and
-- its next step sees the cancel.
UPDATE jobs
SET status = 'canceled',
    finished_at = clock_timestamp(),
    expires_at = clock_timestamp() + make_interval(secs => @retention_seconds::float8)
WHERE account_id = @account_id AND id = @id AND status IN ('queued', 'running')
RETURNING *;

-- name: JobLockForWork :one
-- After JobLock, the worker reads the status that says whether to go on. The row lock keeps
-- the retention sweep (SKIP LOCKED) away; NO KEY UPDATE, the lock an UPDATE of non-key
-- columns takes, does not conflict with the key-share locks that inserting a chunk or a
-- report (foreign keys to this row) takes.
SELECT * FROM jobs
WHERE account_id = @account_id AND id = @id
FOR NO KEY UPDATE;

-- name: JobStart :one
UPDATE jobs
SET status = 'running',
    started_at = coalesce(started_at, clock_timestamp())
WHERE account_id = @account_id AND id = @id
RETURNING *;

-- name: JobAddProgress :exec
UPDATE jobs
SET rows_processed = rows_processed + @rows
WHERE account_id = @account_id AND id = @id;

-- name: JobFinish :one
UPDATE jobs
SET status = @status,
    report_id = sqlc.narg(report_id),
    error_detail = sqlc.narg(error_detail),
    finished_at = clock_timestamp(),
    expires_at = clock_timestamp() + make_interval(secs => @retention_seconds::float8)
WHERE account_id = @account_id AND id = @id
RETURNING *;

-- name: ReportChunkDeleteOfExpiredJobs :execrows
-- The retention sweep (reports.Service.SweepExpired) deletes expired jobs in rounds of two
-- short statements: first the chunks of the @batch_size jobs that expired first (found
-- through jobs_expires_at_idx), at most @batch_size of them, then those of these jobs whose
-- chunks are all gone. A report of a million rows has a thousand chunks, so letting them go
-- with their job's cascade would make one statement of any size.
DELETE FROM report_chunks
WHERE (account_id, job_id, seq) IN (
    SELECT c.account_id, c.job_id, c.seq
    FROM (SELECT expired.account_id, expired.id FROM jobs expired
          WHERE expired.expires_at <= now()
          ORDER BY expired.expires_at
          LIMIT @batch_size) j
    JOIN report_chunks c ON c.account_id = j.account_id AND c.job_id = j.id
    LIMIT @batch_size
);

-- name: JobDeleteExpired :execrows
-- Deletes expired jobs without chunks left; each one's request and report (one row each)
-- cascade. SKIP LOCKED leaves a job a worker is still looking at to the next round.
DELETE FROM jobs
WHERE (account_id, id) IN (
    SELECT j.account_id, j.id
    FROM (SELECT expired.account_id, expired.id FROM jobs expired
          WHERE expired.expires_at <= now()
          ORDER BY expired.expires_at
          LIMIT @batch_size
          FOR UPDATE SKIP LOCKED) j
    WHERE NOT EXISTS (SELECT 1 FROM report_chunks c WHERE c.account_id = j.account_id AND c.job_id = j.id)
);

-- name: JobListAbandoned :many
-- Unfinished jobs whose River job will never run again: discarded without our worker
-- failing the job (its attempts used up by crashes or rescues, so Work never saw its last
-- attempt end), cancelled, or already cleaned out of river_job. jobs_unfinished_idx holds
-- only unfinished jobs (the table keeps finished ones for REPORT_RETENTION).
SELECT jobs.account_id, jobs.id FROM jobs
LEFT JOIN river_job ON river_job.id = jobs.river_job_id
WHERE jobs.status IN ('queued', 'running')
  AND (river_job.id IS NULL OR river_job.state IN ('discarded', 'cancelled'))
ORDER BY jobs.account_id, jobs.id
LIMIT @batch_size;

-- name: JobListUnfinishedByAccount :many
-- A test helper's targets: the account's jobs still waiting for (or between) attempts.
SELECT * FROM jobs
WHERE account_id = @account_id AND status IN ('queued', 'running')
ORDER BY created_at, id;

-- name: RiverJobCountWaiting :many
-- Jobs waiting to run, by queue and state: available (due now), scheduled (for later) or
-- retryable (waiting for a retry's time), with how long the one due longest has been due:
-- for available jobs, how far the workers are behind. Read when /metrics is scraped, so
-- every process reports the depth, whichever one runs the jobs.
SELECT queue, state::text AS state, count(*)::int AS waiting,
    greatest(extract(epoch FROM now() - min(scheduled_at)), 0)::float8 AS due_for_seconds
FROM river_job
WHERE state IN ('available', 'scheduled', 'retryable')
GROUP BY queue, state
ORDER BY queue, state;
