CREATE TABLE payments (
    id              text PRIMARY KEY,
    account_id      text NOT NULL REFERENCES accounts (id),
    amount          bigint NOT NULL CHECK (amount > 0),
    currency        text NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    status          text NOT NULL CHECK (status IN ('succeeded', 'failed', 'refunded', 'partially_refunded')),
    -- The database itself refuses a refund total above the amount, whatever the code does.
    amount_refunded bigint NOT NULL DEFAULT 0 CHECK (amount_refunded BETWEEN 0 AND amount),
    payment_method  text NOT NULL,
    failure_code    text,
    description     text,
    metadata        jsonb NOT NULL DEFAULT '{}',
    -- Bumped by every change; the ETag is derived from it (optimistic concurrency).
    version         integer NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Keyset pagination: newest first within an account, id breaking ties.
CREATE INDEX payments_account_created_idx ON payments (account_id, created_at DESC, id DESC);

-- One row per (account, operation, key) whose use committed, holding the response its
-- transaction produced. The transaction claims the key with an advisory lock and inserts the
-- row, response and all, with its commit (queries/idempotency.sql), so no other transaction
-- ever sees a key without its response. The response columns are nullable for the load
-- tool's floor, which inserts its claim first and its response last, as a naive server does.
CREATE TABLE idempotency_keys (
    account_id       text NOT NULL REFERENCES accounts (id),
    operation        text NOT NULL,
    key              text NOT NULL,
    fingerprint      bytea NOT NULL,
    response_status  integer,
    response_headers jsonb,
    response_body    bytea, -- bytes, not jsonb: jsonb would reorder keys and break byte-identical replays
    created_at       timestamptz NOT NULL DEFAULT now(),
    expires_at       timestamptz NOT NULL,
    PRIMARY KEY (account_id, operation, key)
);

CREATE INDEX idempotency_keys_expires_at_idx ON idempotency_keys (expires_at);

-- The transactional outbox: an event is written in the same transaction as the change it
-- describes, and delivered to webhook endpoints later by a worker.
CREATE TABLE events (
    id         text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id),
    type       text NOT NULL,
    data       jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX events_account_created_idx ON events (account_id, created_at DESC, id DESC);
