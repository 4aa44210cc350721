-- name: EventInsert :exec
INSERT INTO events (id, account_id, type, data)
VALUES (@id, @account_id, @type, @data);

-- name: EventGetByID :one
SELECT * FROM events
WHERE account_id = @account_id AND id = @id;

-- name: EventList :many
-- Keyset pagination, as PaymentList.
SELECT * FROM events
WHERE account_id = @account_id
  AND (created_at, id) < (coalesce(sqlc.narg(after_created_at)::timestamptz, 'infinity'),
                          coalesce(sqlc.narg(after_id)::text, ''))
ORDER BY created_at DESC, id DESC
LIMIT @row_limit;

-- name: EventListByType :many
-- EventList for one type, on events_account_type_created_idx (as RefundListByPayment).
SELECT * FROM events
WHERE account_id = @account_id AND type = @type
  AND (created_at, id) < (coalesce(sqlc.narg(after_created_at)::timestamptz, 'infinity'),
                          coalesce(sqlc.narg(after_id)::text, ''))
ORDER BY created_at DESC, id DESC
LIMIT @row_limit;

-- name: WebhookAttemptDeleteOfExpiredEvents :execrows
-- The retention sweep (events.Sweeper) deletes events created before @before with the
-- webhook deliveries and attempts that reference them, children first, in rounds of three
-- short statements. An event with a delivery still pending is kept until it ends: a retry
-- pushed late by jitter or a receiver's Retry-After, or a redelivery of an old event, would
-- otherwise lose its delivery mid-way, and its job would find nothing to send. Each looks only at the @batch_size oldest such events (found through
-- events_created_idx) and deletes at most @batch_size rows, so no statement holds many row
-- locks or runs for long, however far behind the sweep is. Rows are named by their full
-- key, so each delete is an index lookup whatever the primary key leads with.
DELETE FROM webhook_attempts
WHERE (account_id, delivery_id, attempt) IN (
    SELECT a.account_id, a.delivery_id, a.attempt
    FROM (SELECT old.account_id, old.id FROM events old
          WHERE (old.created_at AT TIME ZONE 'UTC') < (sqlc.arg(before)::timestamptz AT TIME ZONE 'UTC')
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p WHERE p.account_id = old.account_id
                            AND p.event_id = old.id AND p.status = 'pending')
          ORDER BY (old.created_at AT TIME ZONE 'UTC')
          LIMIT @batch_size) e
    JOIN webhook_deliveries d ON d.account_id = e.account_id AND d.event_id = e.id
    JOIN webhook_attempts a ON a.account_id = d.account_id AND a.delivery_id = d.id
    LIMIT @batch_size
);

-- name: WebhookDeliveryDeleteOfExpiredEvents :execrows
-- Only deliveries whose attempts are all gone: the cascade would delete any number of them.
DELETE FROM webhook_deliveries
WHERE (account_id, id) IN (
    SELECT d.account_id, d.id
    FROM (SELECT old.account_id, old.id FROM events old
          WHERE (old.created_at AT TIME ZONE 'UTC') < (sqlc.arg(before)::timestamptz AT TIME ZONE 'UTC')
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p WHERE p.account_id = old.account_id
                            AND p.event_id = old.id AND p.status = 'pending')
          ORDER BY (old.created_at AT TIME ZONE 'UTC')
          LIMIT @batch_size) e
    JOIN webhook_deliveries d ON d.account_id = e.account_id AND d.event_id = e.id
    WHERE NOT EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.account_id = d.account_id AND a.delivery_id = d.id)
    LIMIT @batch_size
);

-- name: EventDeleteExpired :execrows
-- Only events whose deliveries are all gone (the foreign key requires it).
DELETE FROM events
WHERE (account_id, id) IN (
    SELECT e.account_id, e.id
    FROM (SELECT old.account_id, old.id FROM events old
          WHERE (old.created_at AT TIME ZONE 'UTC') < (sqlc.arg(before)::timestamptz AT TIME ZONE 'UTC')
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p WHERE p.account_id = old.account_id
                            AND p.event_id = old.id AND p.status = 'pending')
          ORDER BY (old.created_at AT TIME ZONE 'UTC')
          LIMIT @batch_size) e
    WHERE NOT EXISTS (
        SELECT 1 FROM webhook_deliveries d WHERE d.account_id = e.account_id AND d.event_id = e.id
    )
);
