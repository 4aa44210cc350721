-- Back to keys on ids alone (fails if two accounts hold the same id). River jobs keep the
-- account_id in their args: the previous code ignores it.
DROP INDEX jobs_unfinished_idx;
CREATE INDEX jobs_unfinished_idx ON jobs (id) WHERE status IN ('queued', 'running');
DROP INDEX webhook_deliveries_event_idx;
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);
DROP INDEX webhook_deliveries_account_endpoint_created_idx;
CREATE INDEX webhook_deliveries_endpoint_created_idx ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);
DROP INDEX refunds_account_payment_created_idx;
CREATE INDEX refunds_payment_created_idx ON refunds (payment_id, created_at DESC, id DESC);

ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_account_id_delivery_id_fkey;
ALTER TABLE webhook_deliveries
    DROP CONSTRAINT webhook_deliveries_account_id_endpoint_id_fkey,
    DROP CONSTRAINT webhook_deliveries_account_id_event_id_fkey;
ALTER TABLE reports DROP CONSTRAINT reports_account_id_job_id_fkey;
ALTER TABLE report_chunks DROP CONSTRAINT report_chunks_account_id_job_id_fkey;
ALTER TABLE report_requests DROP CONSTRAINT report_requests_account_id_job_id_fkey;
ALTER TABLE refunds DROP CONSTRAINT refunds_account_id_payment_id_fkey;

ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_pkey, ADD PRIMARY KEY (delivery_id, attempt);
ALTER TABLE webhook_deliveries
    DROP CONSTRAINT webhook_deliveries_pkey, ADD PRIMARY KEY (id),
    DROP CONSTRAINT webhook_deliveries_account_id_endpoint_id_event_id_key, ADD UNIQUE (endpoint_id, event_id);
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_pkey, ADD PRIMARY KEY (id);
ALTER TABLE reports
    DROP CONSTRAINT reports_pkey, ADD PRIMARY KEY (id),
    DROP CONSTRAINT reports_account_id_job_id_key, ADD UNIQUE (job_id);
ALTER TABLE report_chunks DROP CONSTRAINT report_chunks_pkey, ADD PRIMARY KEY (job_id, seq);
ALTER TABLE report_requests DROP CONSTRAINT report_requests_pkey, ADD PRIMARY KEY (job_id);
ALTER TABLE jobs DROP CONSTRAINT jobs_pkey, ADD PRIMARY KEY (id);
ALTER TABLE events DROP CONSTRAINT events_pkey, ADD PRIMARY KEY (id);
ALTER TABLE refunds DROP CONSTRAINT refunds_pkey, ADD PRIMARY KEY (id);
ALTER TABLE payments DROP CONSTRAINT payments_pkey, ADD PRIMARY KEY (id);

ALTER TABLE webhook_attempts DROP COLUMN account_id;
ALTER TABLE report_chunks DROP COLUMN account_id;
ALTER TABLE report_requests DROP COLUMN account_id;

ALTER TABLE refunds ADD FOREIGN KEY (payment_id) REFERENCES payments (id);
ALTER TABLE report_requests ADD FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE;
ALTER TABLE report_chunks ADD FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE;
ALTER TABLE reports ADD FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE;
ALTER TABLE webhook_deliveries
    ADD FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    ADD FOREIGN KEY (event_id) REFERENCES events (id);
ALTER TABLE webhook_attempts ADD FOREIGN KEY (delivery_id) REFERENCES webhook_deliveries (id) ON DELETE CASCADE;
