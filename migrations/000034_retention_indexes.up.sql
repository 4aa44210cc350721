-- The retention sweep deletes events oldest first, a small batch per statement (see
-- EventDeleteExpired): without an index on their age, each batch would scan every account's
-- events to find the oldest. The index is on the UTC wall-clock time, an expression the
-- account's event lists never order by, so no list can take it to walk every account's events
-- in time order (TestLookupPlansLeadWithTheirKeys). Their deliveries are found through
-- webhook_deliveries_event_idx and their attempts through webhook_attempts' primary key;
-- expired jobs, their chunks and expired idempotency keys already have indexes of their own.
CREATE INDEX events_created_idx ON events ((created_at AT TIME ZONE 'UTC'));
