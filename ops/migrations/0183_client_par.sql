-- Issue 31 item 2: a client may be required to push its authorization requests (RFC 9126 6,
-- require_pushed_authorization_requests).
alter table clients add column require_pushed_authorization_requests boolean not null default false;
