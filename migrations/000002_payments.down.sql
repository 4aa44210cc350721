DROP TABLE events;
DROP TABLE idempotency_keys;
DROP TABLE payments;
