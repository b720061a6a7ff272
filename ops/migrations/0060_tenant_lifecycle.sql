-- Tenants as a managed resource (issue 17): lifecycle status, display name, settings.
-- `deleting` refuses everything like `suspended` while the purge job runs; `deleted` is the tombstone
-- left once every row of the tenant is gone (the id is not reused).
alter table tenants
  add column status        text not null default 'active' check (status in ('active', 'suspended', 'deleting', 'deleted')),
  add column display_name  text,
  add column settings      jsonb not null default '{}'::jsonb,
  add column suspended_at  bigint,
  add column deleted_at    bigint;

create index tenants_created_idx on tenants (created_at desc, id desc);
