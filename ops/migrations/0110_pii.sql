-- Issue 14: users' personal data (email, name, metadata) leaves `users` for a sealed row in a PII
-- partition (schema pii_<name> here, or the same schema in a partition's own database); users are found
-- by a blind index of their address. The core row keeps id, tenant, status and its partition.
-- The old columns stay (nullable, emptied by the `migrate` command's sealing step, src/pii/legacy.ts)
-- so rows written before this migration can be sealed by code that has the keys.
alter table users alter column email drop not null;
drop index if exists users_tenant_email;
alter table users add column pii_partition text not null default 'default';
create index users_tenant_partition on users (tenant_id, pii_partition) where status = 'active';

-- A data key per tenant (32 bytes), sealed under a key derived from KEY_ENCRYPTION_KEY; PII rows are
-- sealed under it. Deleting a tenant's key makes its PII unreadable anywhere (crypto-shredding).
create table tenant_data_keys (
  tenant_id  text primary key references tenants(id) on delete cascade,
  wrapped    bytea not null,
  created_at bigint not null default now_ms()
);

-- HMAC-SHA-256(lookup key of `generation`, normalized email): unique per tenant and generation, so
-- entries of two generations coexist during a lookup-key rotation.
create table if not exists user_email_index (
  tenant_id  text not null,
  generation int not null,
  bidx       bytea not null,
  user_id    text not null,
  created_at bigint not null default now_ms(),
  primary key (tenant_id, generation, bidx)
);
create index if not exists user_email_index_user on user_email_index (tenant_id, user_id);
alter table user_email_index add constraint user_email_index_user_fk foreign key (user_id) references users(id) on delete cascade;

-- The default partition always lives in the main database.
create schema if not exists pii_default;
create table pii_default.user_pii (
  tenant_id  text not null,
  user_id    text not null references public.users(id) on delete cascade,
  sealed     bytea not null,
  updated_at bigint not null default now_ms(),
  primary key (tenant_id, user_id)
);

-- Per-tenant partition settings: a forced partition (policy), whether a declared residence counts, rules.
create table tenant_pii_settings (
  tenant_id        text primary key references tenants(id) on delete cascade,
  policy_partition text,
  use_residence    boolean not null default true,
  rules            jsonb not null default '[]',
  updated_at       bigint not null default now_ms()
);

-- A move between partitions in progress (copy, switch, delete): a crash leaves this row, and the move
-- is finished from it (src/pii/move.ts).
create table pii_moves (
  tenant_id      text not null,
  user_id        text not null references users(id) on delete cascade,
  from_partition text not null,
  to_partition   text not null,
  step           text not null default 'copy' check (step in ('copy', 'switched')),
  started_at     bigint not null default now_ms(),
  primary key (tenant_id, user_id)
);
