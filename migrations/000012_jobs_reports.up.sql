-- A job is the API's view of long work (POST /reports answers with one). Its queue entry is
-- a River job (river_job_id), inserted in the same transaction; this row is what clients
-- poll, cancel and list, and what the worker locks to decide whether to go on.
CREATE TABLE jobs (
    id             text PRIMARY KEY,
    account_id     text NOT NULL REFERENCES accounts (id),
    type           text NOT NULL CHECK (type IN ('report')),
    status         text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'canceled')),
    river_job_id   bigint NOT NULL,
    rows_processed bigint NOT NULL DEFAULT 0,
    error_detail   text,    -- why a failed job failed, safe to show the client
    -- The report a succeeded job built. Not a foreign key: reports references jobs, and
    -- both are written in the job's final transaction.
    report_id      text,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    started_at     timestamptz,
    finished_at    timestamptz,
    -- Set when the job finishes (finished_at + REPORT_RETENTION); the sweep deletes the job,
    -- its request, chunks and report after it.
    expires_at     timestamptz,
    CHECK ((status IN ('succeeded', 'failed', 'canceled')) = (finished_at IS NOT NULL)),
    CHECK ((finished_at IS NULL) = (expires_at IS NULL))
);

CREATE INDEX jobs_account_created_idx ON jobs (account_id, created_at DESC, id DESC);
CREATE INDEX jobs_expires_at_idx ON jobs (expires_at) WHERE expires_at IS NOT NULL;

-- What a report job was asked for, and how far its build has got. The cursor (the last row
-- written, in (created_at, id) order) and the chunk count commit with each page, so a build
-- that is interrupted (a crash, a timeout, a shutdown) resumes where it stopped instead of
-- starting over: every source row is written exactly once.
CREATE TABLE report_requests (
    job_id            text PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    type              text NOT NULL CHECK (type IN ('payments', 'refunds')),
    format            text NOT NULL CHECK (format IN ('csv', 'json')),
    created_gte       timestamptz NOT NULL,
    created_lt        timestamptz NOT NULL CHECK (created_lt > created_gte),
    cursor_created_at timestamptz,
    cursor_id         text,
    chunks            integer NOT NULL DEFAULT 0,
    bytes             bigint NOT NULL DEFAULT 0
);

-- The report's bytes, one row per page of source rows. Rows in a table rather than large
-- objects: they are written in the same transaction as the page's cursor, deleted by the
-- cascade from their job (large objects would need lo_unlink and can be orphaned), and read
-- back one chunk at a time, so neither writing nor downloading holds a report in memory.
-- PostgreSQL compresses and TOASTs each chunk.
CREATE TABLE report_chunks (
    job_id text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq    integer NOT NULL CHECK (seq >= 0),
    data   bytea NOT NULL,
    PRIMARY KEY (job_id, seq)
);

-- A finished report. It exists only once its job succeeded, and it never changes; it expires
-- with its job.
CREATE TABLE reports (
    id          text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id),
    job_id      text NOT NULL UNIQUE REFERENCES jobs (id) ON DELETE CASCADE,
    type        text NOT NULL,
    format      text NOT NULL,
    created_gte timestamptz NOT NULL,
    created_lt  timestamptz NOT NULL,
    row_count   bigint NOT NULL,
    byte_size   bigint NOT NULL,
    chunks      integer NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
