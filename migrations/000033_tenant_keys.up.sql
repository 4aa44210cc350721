-- Every key of an account's rows leads with account_id: primary keys are (account_id, id),
-- foreign keys carry the account, and no index is left on an id alone.
--
-- Why: the server prepares each statement once per connection, and PostgreSQL soon keeps one
-- generic plan for it, made from whatever statistics the tables had at that moment. A lookup
-- WHERE account_id = $1 AND id = $2 had two indexes to choose from, (id) and
-- (account_id, created_at, id), and neither has exactly those columns first: a plan made
-- while the table was nearly empty walked the second, every entry of the account, for one
-- row (10 ms for a payment in an account of 98,718). An index whose leading columns are
-- exactly a lookup's equality columns is the cheapest plan whatever the statistics say, and
-- with no index on the id alone there is no second unique index for the planner to tie with.
-- Keys that lead with the account are also what a table distributed by account (Citus) needs.
--
-- Tables that had no account_id (report requests and chunks, webhook attempts) get it from
-- their parent. Every id stays unique in practice (random, prefixed by type), but the
-- database now enforces it within an account only: no query looks an id up without one.

-- River jobs still queued find their rows by the account now; jobs inserted from now on carry
-- it (reports.BuildArgs, webhooks.DeliverArgs).
UPDATE river_job SET args = args || jsonb_build_object('account_id', jobs.account_id)
FROM jobs
WHERE river_job.kind = 'report.build' AND river_job.finalized_at IS NULL
  AND jobs.id = river_job.args ->> 'job_id';
UPDATE river_job SET args = args || jsonb_build_object('account_id', d.account_id)
FROM webhook_deliveries d
WHERE river_job.kind = 'webhook.deliver' AND river_job.finalized_at IS NULL
  AND d.id = river_job.args ->> 'delivery_id';

-- The foreign keys to ids alone go first: the keys they reference are replaced below.
ALTER TABLE refunds DROP CONSTRAINT refunds_payment_id_fkey;
ALTER TABLE report_requests DROP CONSTRAINT report_requests_job_id_fkey;
ALTER TABLE report_chunks DROP CONSTRAINT report_chunks_job_id_fkey;
ALTER TABLE reports DROP CONSTRAINT reports_job_id_fkey;
ALTER TABLE webhook_deliveries
    DROP CONSTRAINT webhook_deliveries_endpoint_id_fkey,
    DROP CONSTRAINT webhook_deliveries_event_id_fkey;
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_delivery_id_fkey;

ALTER TABLE report_requests ADD COLUMN account_id text;
UPDATE report_requests r SET account_id = j.account_id FROM jobs j WHERE j.id = r.job_id;
ALTER TABLE report_requests ALTER COLUMN account_id SET NOT NULL;

ALTER TABLE report_chunks ADD COLUMN account_id text;
UPDATE report_chunks c SET account_id = j.account_id FROM jobs j WHERE j.id = c.job_id;
ALTER TABLE report_chunks ALTER COLUMN account_id SET NOT NULL;

ALTER TABLE webhook_attempts ADD COLUMN account_id text;
UPDATE webhook_attempts a SET account_id = d.account_id FROM webhook_deliveries d WHERE d.id = a.delivery_id;
ALTER TABLE webhook_attempts ALTER COLUMN account_id SET NOT NULL;

ALTER TABLE payments DROP CONSTRAINT payments_pkey, ADD PRIMARY KEY (account_id, id);
ALTER TABLE refunds DROP CONSTRAINT refunds_pkey, ADD PRIMARY KEY (account_id, id);
ALTER TABLE events DROP CONSTRAINT events_pkey, ADD PRIMARY KEY (account_id, id);
ALTER TABLE jobs DROP CONSTRAINT jobs_pkey, ADD PRIMARY KEY (account_id, id);
ALTER TABLE report_requests DROP CONSTRAINT report_requests_pkey, ADD PRIMARY KEY (account_id, job_id);
ALTER TABLE report_chunks DROP CONSTRAINT report_chunks_pkey, ADD PRIMARY KEY (account_id, job_id, seq);
ALTER TABLE reports
    DROP CONSTRAINT reports_pkey, ADD PRIMARY KEY (account_id, id),
    DROP CONSTRAINT reports_job_id_key, ADD UNIQUE (account_id, job_id);
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_pkey, ADD PRIMARY KEY (account_id, id);
-- The unique key also serves deleting an endpoint's deliveries (the cascade) and failing
-- its pending ones: both look them up by (account_id, endpoint_id).
ALTER TABLE webhook_deliveries
    DROP CONSTRAINT webhook_deliveries_pkey, ADD PRIMARY KEY (account_id, id),
    DROP CONSTRAINT webhook_deliveries_endpoint_id_event_id_key, ADD UNIQUE (account_id, endpoint_id, event_id);
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_pkey, ADD PRIMARY KEY (account_id, delivery_id, attempt);

ALTER TABLE refunds ADD FOREIGN KEY (account_id, payment_id) REFERENCES payments (account_id, id);
ALTER TABLE report_requests ADD FOREIGN KEY (account_id, job_id) REFERENCES jobs (account_id, id) ON DELETE CASCADE;
ALTER TABLE report_chunks ADD FOREIGN KEY (account_id, job_id) REFERENCES jobs (account_id, id) ON DELETE CASCADE;
ALTER TABLE reports ADD FOREIGN KEY (account_id, job_id) REFERENCES jobs (account_id, id) ON DELETE CASCADE;
ALTER TABLE webhook_deliveries
    ADD FOREIGN KEY (account_id, endpoint_id) REFERENCES webhook_endpoints (account_id, id) ON DELETE CASCADE,
    ADD FOREIGN KEY (account_id, event_id) REFERENCES events (account_id, id);
ALTER TABLE webhook_attempts
    ADD FOREIGN KEY (account_id, delivery_id) REFERENCES webhook_deliveries (account_id, id) ON DELETE CASCADE;

-- GET /refunds?payment_id= and an endpoint's deliveries: a page under both equality columns.
DROP INDEX refunds_payment_created_idx;
CREATE INDEX refunds_account_payment_created_idx ON refunds (account_id, payment_id, created_at DESC, id DESC);
DROP INDEX webhook_deliveries_endpoint_created_idx;
CREATE INDEX webhook_deliveries_account_endpoint_created_idx
    ON webhook_deliveries (account_id, endpoint_id, created_at DESC, id DESC);

-- Deleting an event checks for deliveries of it (see 000031).
DROP INDEX webhook_deliveries_event_idx;
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (account_id, event_id);

-- The sweep's unfinished jobs (see 000031), in the primary key's order.
DROP INDEX jobs_unfinished_idx;
CREATE INDEX jobs_unfinished_idx ON jobs (account_id, id) WHERE status IN ('queued', 'running');
