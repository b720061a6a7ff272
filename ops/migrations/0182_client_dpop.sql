-- Issue 31 item 1: a client may require DPoP-bound access tokens (RFC 9449 5.2, dpop_bound_access_tokens).
alter table clients add column dpop_bound_access_tokens boolean not null default false;
