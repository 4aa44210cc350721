DROP INDEX IF EXISTS events_created_idx;
