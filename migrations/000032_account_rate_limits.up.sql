-- An account may carry quotas of its own for the per-account rate-limit policies, in place of
-- the server's (POST /test/accounts takes them): a client's tests then meet a 429 after a
-- known number of requests, however fast the machine. NULL is the server's quota. The server
-- uses an account's own quota only while it is within its own, so a quota stored here can
-- only ever limit an account more.
ALTER TABLE accounts
    ADD COLUMN rate_limit_default_quota          integer,
    ADD COLUMN rate_limit_default_window_seconds integer,
    ADD COLUMN rate_limit_writes_quota           integer,
    ADD COLUMN rate_limit_writes_window_seconds  integer,
    ADD CONSTRAINT accounts_rate_limit_default_check CHECK (
        (rate_limit_default_quota IS NULL) = (rate_limit_default_window_seconds IS NULL)
        AND rate_limit_default_quota > 0 AND rate_limit_default_window_seconds > 0),
    ADD CONSTRAINT accounts_rate_limit_writes_check CHECK (
        (rate_limit_writes_quota IS NULL) = (rate_limit_writes_window_seconds IS NULL)
        AND rate_limit_writes_quota > 0 AND rate_limit_writes_window_seconds > 0);
