-- The retention sweep deletes events oldest first, a small batch per statement (see
-- EventDeleteExpired): without an index that leads with created_at, each batch would scan
-- every account's events to find the oldest. Their deliveries are found through
-- webhook_deliveries_event_idx and their attempts through webhook_attempts' primary key;
-- expired jobs, their chunks and expired idempotency keys already have indexes of their own.
CREATE INDEX events_created_idx ON events (created_at);
