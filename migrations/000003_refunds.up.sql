CREATE TABLE refunds (
    id         text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id),
    payment_id text NOT NULL REFERENCES payments (id),
    amount     bigint NOT NULL CHECK (amount > 0),
    currency   text NOT NULL,
    status     text NOT NULL CHECK (status IN ('succeeded')),
    reason     text CHECK (reason IN ('duplicate', 'fraudulent', 'requested_by_customer')),
    metadata   jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX refunds_account_created_idx ON refunds (account_id, created_at DESC, id DESC);
CREATE INDEX refunds_payment_created_idx ON refunds (payment_id, created_at DESC, id DESC);
