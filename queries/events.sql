-- name: EventInsert :exec
INSERT INTO events (id, account_id, type, data)
VALUES (@id, @account_id, @type, @data);
