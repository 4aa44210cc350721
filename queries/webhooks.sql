-- name: WebhookEndpointInsert :one
INSERT INTO webhook_endpoints (id, account_id, url, description, enabled_events, secret)
VALUES (@id, @account_id, @url, @description, @enabled_events, @secret)
RETURNING *;

-- name: WebhookEndpointGetByID :one
SELECT * FROM webhook_endpoints
WHERE account_id = @account_id AND id = @id;

-- name: WebhookEndpointList :many
-- Keyset pagination, as PaymentList.
SELECT * FROM webhook_endpoints
WHERE account_id = @account_id
  AND (created_at, id) < (coalesce(sqlc.narg(after_created_at)::timestamptz, 'infinity'),
                          coalesce(sqlc.narg(after_id)::text, ''))
ORDER BY created_at DESC, id DESC
LIMIT @row_limit;

-- name: WebhookEndpointUpdate :one
-- The If-Match check and the write are one statement, as PaymentUpdate. Enabling an endpoint
-- forgets its failures, so it is not disabled again at once for failing since long ago. A
-- patch that would leave what the API shows as it is updates nothing, so the version and the
-- ETag stay: a no-op must not make other clients' tags stale (as PaymentUpdate).
UPDATE webhook_endpoints
SET url = coalesce(sqlc.narg(url), url),
    enabled_events = coalesce(sqlc.narg(enabled_events)::text[], enabled_events),
    description = CASE WHEN @set_description::boolean THEN sqlc.narg(description) ELSE description END,
    disabled_reason = CASE WHEN sqlc.narg(disabled)::boolean IS NULL THEN disabled_reason
                           WHEN sqlc.narg(disabled)::boolean THEN coalesce(disabled_reason, 'requested')
                           ELSE NULL END,
    failing_since = CASE WHEN sqlc.narg(disabled)::boolean = false THEN NULL ELSE failing_since END,
    version = version + 1,
    updated_at = clock_timestamp()
WHERE account_id = @account_id
  AND id = @id
  AND (@any_version::boolean OR version = ANY (@versions::integer[]))
  AND (url, enabled_events, description, disabled_reason IS NULL) IS DISTINCT FROM (
        coalesce(sqlc.narg(url), url),
        coalesce(sqlc.narg(enabled_events)::text[], enabled_events),
        CASE WHEN @set_description::boolean THEN sqlc.narg(description) ELSE description END,
        coalesce(NOT sqlc.narg(disabled)::boolean, disabled_reason IS NULL))
RETURNING *;

-- name: WebhookEndpointGetForUpdate :one
-- Locks the endpoint until the transaction ends: to tell a stale If-Match from a no-op.
SELECT * FROM webhook_endpoints
WHERE account_id = @account_id AND id = @id
FOR UPDATE;

-- name: WebhookDeliveryLockByEndpoint :exec
-- Deleting an endpoint locks its deliveries before the endpoint's row, in the order a
-- record of an attempt takes them: its delivery, then the endpoint (see WebhookDeliveryLock).
-- The cascade from the endpoint's row would lock them after it, and wait for a record that
-- waits for the endpoint: a deadlock.
SELECT 1 FROM webhook_deliveries
WHERE account_id = @account_id AND endpoint_id = @endpoint_id
ORDER BY id
FOR UPDATE;

-- name: WebhookEndpointDelete :execrows
DELETE FROM webhook_endpoints
WHERE account_id = @account_id AND id = @id;

-- name: WebhookEndpointRotateSecret :one
-- The current secret becomes the previous one and keeps signing until @previous_expires_at.
UPDATE webhook_endpoints
SET previous_secret = secret,
    previous_secret_expires_at = @previous_expires_at,
    secret = @secret,
    version = version + 1,
    updated_at = clock_timestamp()
WHERE account_id = @account_id AND id = @id
RETURNING *;

-- name: WebhookEndpointListSubscribed :many
-- The enabled endpoints an event of @type goes to: the fan-out, inside the event's transaction.
SELECT id FROM webhook_endpoints
WHERE account_id = @account_id
  AND disabled_reason IS NULL
  AND (@type::text = ANY (enabled_events) OR '*' = ANY (enabled_events))
ORDER BY id;

-- name: WebhookEndpointListSubscribedAny :many
-- The enabled endpoints an event of any of @types goes to, each with the events it takes: one
-- read for a create, which learns only later which event it records (db.Ahead). An endpoint
-- takes an event of type t if t or '*' is among its events, as in WebhookEndpointListSubscribed.
SELECT id, enabled_events FROM webhook_endpoints
WHERE account_id = @account_id
  AND disabled_reason IS NULL
  AND (enabled_events && @types::text[] OR '*' = ANY (enabled_events))
ORDER BY id;

-- name: WebhookDeliveryInsertMany :exec
-- One delivery per endpoint that still exists. A create reads its endpoints ahead, before
-- the charge (db.SubscribedEndpointsAhead), and one deleted during the charge is skipped
-- here rather than failing the foreign key and, with it, the payment. FOR KEY SHARE waits
-- for a delete not yet committed, then skips the row if it committed; in a LATERAL subquery
-- it also keeps each endpoint a lookup by its key.
INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id)
SELECT d.id, e.account_id, e.id, @event_id
FROM (SELECT unnest(@ids::text[]) AS id, unnest(@endpoint_ids::text[]) AS endpoint_id) AS d,
LATERAL (SELECT w.account_id, w.id FROM webhook_endpoints AS w
         WHERE w.account_id = @account_id AND w.id = d.endpoint_id
         FOR KEY SHARE) AS e;

-- name: WebhookDeliveryRequeue :one
-- Queues an event for an endpoint again, now, with a fresh retry schedule. An earlier
-- delivery keeps its id (the webhook-id receivers dedupe on) and its attempts.
INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id)
VALUES (@id, @account_id, @endpoint_id, @event_id)
ON CONFLICT (account_id, endpoint_id, event_id) DO UPDATE
SET status = 'pending',
    round_attempts = 0,
    next_attempt_at = clock_timestamp(),
    updated_at = clock_timestamp()
RETURNING *;

-- name: WebhookDeliveryListByEndpoint :many
-- Keyset pagination, as PaymentList, with the event's type for display. The type is read by
-- a subquery, one event by its key: joined, the account_id = @account_id both tables share
-- lets a generic plan read all the account's events and hash them.
SELECT sqlc.embed(webhook_deliveries),
       (SELECT events.type FROM events
        WHERE events.account_id = webhook_deliveries.account_id AND events.id = webhook_deliveries.event_id) AS event_type
FROM webhook_deliveries
WHERE webhook_deliveries.account_id = @account_id AND webhook_deliveries.endpoint_id = @endpoint_id
  AND (webhook_deliveries.created_at, webhook_deliveries.id)
      < (coalesce(sqlc.narg(after_created_at)::timestamptz, 'infinity'), coalesce(sqlc.narg(after_id)::text, ''))
ORDER BY webhook_deliveries.created_at DESC, webhook_deliveries.id DESC
LIMIT @row_limit;

-- name: WebhookDeliveryGetByID :one
SELECT * FROM webhook_deliveries
WHERE account_id = @account_id AND id = @id;

-- name: WebhookAttemptListByDeliveries :many
-- The latest attempts of a page of deliveries, at most @per_delivery of each, read by the
-- delivery's key from its last attempt back: every redelivery adds attempts to the same
-- delivery, so a page must not grow with them. The LIMIT keeps the subquery apart: folded
-- into a join, or written delivery_id = ANY (...), a generic plan may read all the account's
-- attempts and keep the page's.
SELECT attempts.*
FROM unnest(@delivery_ids::text[]) AS page (delivery_id)
CROSS JOIN LATERAL (
    SELECT * FROM webhook_attempts
    WHERE webhook_attempts.account_id = @account_id AND webhook_attempts.delivery_id = page.delivery_id
    ORDER BY webhook_attempts.attempt DESC
    LIMIT @per_delivery
) attempts
ORDER BY attempts.delivery_id, attempts.attempt;

-- name: WebhookAttemptInsert :exec
INSERT INTO webhook_attempts (account_id, delivery_id, attempt, attempted_at, duration_ms, response_status, error)
VALUES (@account_id, @delivery_id, @attempt, @attempted_at, @duration_ms, @response_status, @error);

-- name: WebhookDeliveryLock :one
-- The delivery as it is now, locked until the transaction ends: an attempt is recorded, and a
-- job ended, against it, while a redelivery (WebhookDeliveryRequeue) waits.
SELECT * FROM webhook_deliveries
WHERE account_id = @account_id AND id = @id
FOR UPDATE;

-- name: WebhookDeliveryRecordAttempt :exec
-- Counts an attempt and sets what follows: pending with the next attempt's time, or
-- succeeded / failed with none.
UPDATE webhook_deliveries
SET attempt_count = attempt_count + 1,
    round_attempts = round_attempts + 1,
    status = @status,
    next_attempt_at = sqlc.narg(next_attempt_at),
    updated_at = clock_timestamp()
WHERE account_id = @account_id AND id = @id;

-- name: WebhookDeliveryCountAttempt :exec
-- Counts an attempt that decides nothing: the delivery ended while it was in flight (its
-- endpoint was disabled).
UPDATE webhook_deliveries
SET attempt_count = attempt_count + 1,
    updated_at = clock_timestamp()
WHERE account_id = @account_id AND id = @id;

-- name: WebhookDeliveryFail :exec
-- Ends a pending delivery without an attempt: its endpoint is disabled.
UPDATE webhook_deliveries
SET status = 'failed', next_attempt_at = NULL, updated_at = clock_timestamp()
WHERE account_id = @account_id AND id = @id AND status = 'pending';

-- name: WebhookDeliveryFailPendingByEndpoint :exec
-- A disabled endpoint is sent nothing more: its pending deliveries end. Those another
-- transaction holds are left to it (SKIP LOCKED): an attempt being recorded holds its
-- delivery and waits for the endpoint's row, which the transaction disabling the endpoint
-- holds, so waiting for it would be a deadlock. Each such delivery still ends: its record
-- then finds the endpoint disabled, and a job that comes to it finds the same (finish).
UPDATE webhook_deliveries AS d
SET status = 'failed', next_attempt_at = NULL, updated_at = clock_timestamp()
WHERE d.account_id = @account_id AND d.endpoint_id = @endpoint_id AND d.id IN (
    SELECT pending.id FROM webhook_deliveries AS pending
    WHERE pending.account_id = @account_id AND pending.endpoint_id = @endpoint_id AND pending.status = 'pending'
    FOR UPDATE SKIP LOCKED
);

-- name: WebhookEndpointRecordSuccess :exec
UPDATE webhook_endpoints SET failing_since = NULL
WHERE account_id = @account_id AND id = @id AND failing_since IS NOT NULL;

-- name: WebhookEndpointRecordFailure :one
-- Remembers since when every attempt has failed, and disables the endpoint when that was at
-- or before @disable_if_failing_since.
UPDATE webhook_endpoints
SET failing_since = coalesce(failing_since, @now),
    disabled_reason = CASE WHEN disabled_reason IS NULL AND failing_since <= @disable_if_failing_since
                           THEN 'failing' ELSE disabled_reason END,
    version = CASE WHEN disabled_reason IS NULL AND failing_since <= @disable_if_failing_since
                   THEN version + 1 ELSE version END,
    updated_at = clock_timestamp()
WHERE account_id = @account_id AND id = @id
RETURNING disabled_reason;

-- name: WebhookEndpointDisableGone :exec
-- The receiver answered 410 Gone: it asks never to be called again.
UPDATE webhook_endpoints
SET disabled_reason = 'gone', version = version + 1, updated_at = clock_timestamp()
WHERE account_id = @account_id AND id = @id AND disabled_reason IS NULL;

-- name: WebhookDeliveryRetryNowByAccount :many
-- A test helper: every pending delivery of the account is due now, and the caller makes their
-- scheduled jobs due too. Not only those scheduled for later: a job still running its attempt
-- when the helper is called schedules its next attempt afterwards, and a second call must find
-- its delivery again even though this one already set next_attempt_at.
UPDATE webhook_deliveries
SET next_attempt_at = clock_timestamp(), updated_at = clock_timestamp()
WHERE account_id = @account_id AND status = 'pending'
RETURNING id, endpoint_id;
