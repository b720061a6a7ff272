-- End users of a tenant. Email is unique per tenant (case-insensitive).
create table users (
  id          text primary key,
  tenant_id   text not null references tenants(id) on delete cascade,
  email       text not null,
  name        text,
  status      text not null default 'active' check (status in ('active', 'suspended', 'locked')),
  email_verified boolean not null default false,
  metadata    jsonb not null default '{}',
  created_at  bigint not null default now_ms(),
  updated_at  bigint not null default now_ms()
);
create unique index users_tenant_email on users (tenant_id, lower(email));
