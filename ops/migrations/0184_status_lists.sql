-- Issue 31 item 6: token status lists (draft-ietf-oauth-status-list). Each tenant's access tokens get
-- indices from its counter (handed out to processes in blocks); a revoked token's index is kept with its
-- revocation, so the list is built from Postgres, the durable record.
create table status_list_counters (
  tenant_id text primary key,
  next      bigint not null
);
alter table revocations add column status_idx bigint;
create index revocations_status_idx on revocations (tenant_id, status_idx) where status_idx is not null;
