DROP INDEX IF EXISTS jobs_status_account_created_idx;
DROP INDEX IF EXISTS payments_status_account_created_idx;
