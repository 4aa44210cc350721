-- A page of one status (GET /payments?status=..., GET /jobs?status=...) is one range of these
-- indexes, newest first as the pages are ordered. Without them the status was a filter on
-- the account's range of (account_id, created_at, id), and a plan that guessed the status
-- rare read every row of the account and sorted them (a page of failed payments: 40,128
-- buffers and 256 ms in an account of 900,000 payments, never analysed).
--
-- The status leads, then the account: with the account first, the index would also serve a
-- lookup by (account_id, id) as well as the primary key does on a nearly empty table, and a
-- plan made then walked it (every entry of the account) once the account was large
-- (TestLookupPlansLeadWithTheirKeys caught it). With the status first, only a query that names
-- a status can start a scan in it. Rows stay distributable by account_id: the primary keys
-- lead with it.
CREATE INDEX payments_status_account_created_idx ON payments (status, account_id, created_at DESC, id DESC);
CREATE INDEX jobs_status_account_created_idx ON jobs (status, account_id, created_at DESC, id DESC);
