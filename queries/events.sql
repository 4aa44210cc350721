-- name: EventInsert :exec
INSERT INTO events (id, account_id, type, data)
VALUES (@id, @account_id, @type, @data);

-- name: EventListByAccount :many
SELECT * FROM events
WHERE account_id = @account_id
ORDER BY created_at DESC, id DESC
LIMIT @row_limit;
