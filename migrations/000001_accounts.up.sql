-- Accounts own every other row; an API key belongs to exactly one account.
CREATE TABLE accounts (
    id         text PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Keys are stored as SHA-256 hashes only. A fast hash is enough because keys are long random
-- strings (nothing to brute-force); the short prefix lets a human tell keys apart.
CREATE TABLE api_keys (
    id         text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id),
    key_hash   bytea NOT NULL UNIQUE,
    prefix     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);

CREATE INDEX api_keys_account_id_idx ON api_keys (account_id);
