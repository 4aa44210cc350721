ALTER TABLE accounts
    DROP COLUMN IF EXISTS rate_limit_default_quota,
    DROP COLUMN IF EXISTS rate_limit_default_window_seconds,
    DROP COLUMN IF EXISTS rate_limit_writes_quota,
    DROP COLUMN IF EXISTS rate_limit_writes_window_seconds;
