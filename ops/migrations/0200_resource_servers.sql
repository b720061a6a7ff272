-- Issue 32 item 2: resource servers of a tenant (RFC 8707 resource indicators, RFC 9728 metadata). The
-- identifier is the absolute URI clients name as `resource`; the scopes bound what tokens for it carry.
create table resource_servers (
  tenant_id   text not null references tenants(id) on delete cascade,
  id          text not null,
  identifier  text not null,
  name        text not null,
  scopes      text[] not null default '{}',
  documentation_uri text,
  created_at  bigint not null default now_ms(),
  updated_at  bigint not null default now_ms(),
  primary key (tenant_id, id),
  unique (tenant_id, identifier)
);
