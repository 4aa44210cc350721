DROP INDEX IF EXISTS jobs_unfinished_idx;
DROP INDEX IF EXISTS webhook_deliveries_event_idx;
