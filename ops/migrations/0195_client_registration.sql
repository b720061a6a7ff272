-- Issue 32 item 1: dynamic client registration (RFC 7591) and its management (RFC 7592), per tenant.

-- A client made through POST /register; it is otherwise a normal client (admin API, tokens, events).
alter table clients add column registered_dynamically boolean not null default false;

-- One per dynamically registered client: its RFC 7592 registration access token (only its keyed hash,
-- replaced on every PUT) and the informative metadata svc does not otherwise use but must echo back.
create table client_registrations (
  client_id          text primary key references clients(client_id) on delete cascade,
  tenant_id          text not null references tenants(id) on delete cascade,
  token_hash         bytea not null,
  metadata           jsonb not null default '{}',
  initial_access_token_id text,
  software_statement_issuer text,
  created_at         bigint not null default now_ms(),
  updated_at         bigint not null default now_ms()
);
create index client_registrations_tenant on client_registrations (tenant_id);

-- A tenant's registration policy; a tenant without a row has the defaults (open registration off).
create table registration_policies (
  tenant_id                  text primary key references tenants(id) on delete cascade,
  open_registration          boolean not null default false,
  require_software_statement boolean not null default false,
  allowed_grant_types        text[] not null,
  allowed_scopes             text[] not null,
  allowed_audiences          text[] not null,
  allowed_auth_methods       text[] not null,
  max_clients                integer not null,
  rate_limit_per_minute      integer not null,
  updated_at                 bigint not null default now_ms()
);

-- Initial access tokens (RFC 7591 3): `<id>.<secret>`, only the secret's keyed hash is stored.
create table initial_access_tokens (
  id           text primary key,
  tenant_id    text not null references tenants(id) on delete cascade,
  token_hash   bytea not null,
  description  text,
  expires_at   bigint,
  max_uses     integer,
  uses         integer not null default 0,
  revoked_at   bigint,
  created_by   text,
  created_at   bigint not null default now_ms()
);
create index initial_access_tokens_tenant on initial_access_tokens (tenant_id, created_at desc);

-- Issuers whose software statements (RFC 7591 2.3) a tenant trusts, with their public keys.
create table software_statement_issuers (
  id           text primary key,
  tenant_id    text not null references tenants(id) on delete cascade,
  issuer       text not null,
  jwks         jsonb not null,
  description  text,
  created_at   bigint not null default now_ms(),
  unique (tenant_id, issuer)
);
