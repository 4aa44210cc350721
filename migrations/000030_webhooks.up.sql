-- A customer's URL that receives signed events. The secret is kept in clear because signing
-- needs the key itself (HMAC); it is shown to the customer only on creation and rotation.
CREATE TABLE webhook_endpoints (
    id                         text PRIMARY KEY,
    account_id                 text NOT NULL REFERENCES accounts (id),
    url                        text NOT NULL,
    description                text,
    enabled_events             text[] NOT NULL CHECK (cardinality(enabled_events) > 0),
    disabled_reason            text CHECK (disabled_reason IN ('requested', 'gone', 'failing')), -- NULL: enabled
    secret                     text NOT NULL,
    -- After a rotation the previous secret signs beside the new one until it expires.
    previous_secret            text,
    previous_secret_expires_at timestamptz,
    -- Set by the first failed attempt after a success, cleared by the next success: an
    -- endpoint failing for days is disabled.
    failing_since              timestamptz,
    version                    integer NOT NULL DEFAULT 1,
    created_at                 timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at                 timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX webhook_endpoints_account_created_idx ON webhook_endpoints (account_id, created_at DESC, id DESC);

-- One event for one endpoint. Its id is the webhook-id header: the same on every attempt and
-- on a redelivery, so receivers can dedupe. Written in the transaction that writes the event.
CREATE TABLE webhook_deliveries (
    id              text PRIMARY KEY,
    account_id      text NOT NULL REFERENCES accounts (id),
    endpoint_id     text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id        text NOT NULL REFERENCES events (id),
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempt_count   integer NOT NULL DEFAULT 0,
    -- Attempts since the delivery was (re)queued: the position in the retry schedule.
    round_attempts  integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz DEFAULT clock_timestamp(), -- NULL once succeeded or failed
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (endpoint_id, event_id),
    CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
);

CREATE INDEX webhook_deliveries_endpoint_created_idx ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);

-- Every attempt, as the customer sees it in GET /webhook-endpoints/{id}/deliveries.
CREATE TABLE webhook_attempts (
    delivery_id     text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt         integer NOT NULL CHECK (attempt > 0),
    attempted_at    timestamptz NOT NULL,
    duration_ms     integer NOT NULL CHECK (duration_ms >= 0),
    response_status integer,
    error           text,
    PRIMARY KEY (delivery_id, attempt)
);

-- GET /events?type=
CREATE INDEX events_account_type_created_idx ON events (account_id, type, created_at DESC, id DESC);
