-- Deleting an account deletes its events, and each deleted event has PostgreSQL look for
-- webhook deliveries that reference it: without an index that leads with event_id, every
-- one of those checks scans the whole table, every account's deliveries included.
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);

-- The sweep looks for unfinished jobs every minute (JobListAbandoned); the table keeps
-- finished ones for REPORT_RETENTION, so only the few unfinished ones are indexed.
CREATE INDEX jobs_unfinished_idx ON jobs (id) WHERE status IN ('queued', 'running');
