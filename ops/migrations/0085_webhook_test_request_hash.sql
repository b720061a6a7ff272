-- Issue 21 item 12: an Idempotency-Key reused with a different request body is refused, so the key
-- remembers a hash of the request it was first used with (null for keys stored before this migration).
alter table webhook_test_idempotency add column request_hash text;
