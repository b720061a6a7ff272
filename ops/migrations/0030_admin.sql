-- Administration core (issue 4): audit log, roles, admin policies, machine access principals,
-- check API keys, platform settings. Every table carries tenant_id and every query filters by it.
-- Timestamps are epoch milliseconds, as on the administration interface.

create table admin_audit_log (
  tenant_id           text not null,
  id                  text not null,
  admin_user_id       text not null,
  admin_email         text not null,
  admin_user_name     text,
  actor_type          text not null check (actor_type in ('user', 'machine')),
  actor_id            text not null,
  actor_display_name  text not null,
  action              text not null,
  resource_type       text not null,
  resource_id         text not null default '',
  result              text not null check (result in ('success', 'failure')),
  severity            text not null check (severity in ('debug', 'info', 'warn', 'error', 'critical')),
  metadata            jsonb not null default '{}',
  before              jsonb,
  after               jsonb,
  created_at          bigint not null default now_ms(),
  primary key (tenant_id, id)
);
create index admin_audit_log_list on admin_audit_log (tenant_id, created_at desc, id desc);
create index admin_audit_log_resource on admin_audit_log (tenant_id, resource_type, resource_id);

create table roles (
  tenant_id   text not null references tenants(id) on delete cascade,
  id          text not null,
  name        text not null,
  description text,
  permissions text[] not null default '{}',
  created_at  bigint not null default now_ms(),
  updated_at  bigint not null default now_ms(),
  primary key (tenant_id, id)
);
create unique index roles_tenant_name on roles (tenant_id, lower(name));

create table user_roles (
  tenant_id   text not null,
  user_id     text not null references users(id) on delete cascade,
  role_id     text not null,
  assigned_at bigint not null default now_ms(),
  assigned_by text,
  primary key (tenant_id, user_id, role_id),
  foreign key (tenant_id, role_id) references roles (tenant_id, id) on delete cascade
);
create index user_roles_role on user_roles (tenant_id, role_id);

create table admin_policies (
  tenant_id      text not null references tenants(id) on delete cascade,
  id             text not null,
  name           text not null,
  description    text,
  priority       integer not null default 0,
  effect         text not null check (effect in ('allow', 'deny')),
  conditions     jsonb not null default '[]',
  resource_types text[] not null default '{}',
  actions        text[] not null default '{}',
  enabled        boolean not null default false,
  -- Other fields a client sent (the spec lets policy objects carry extra properties); echoed back.
  extra          jsonb not null default '{}',
  created_by     text,
  updated_by     text,
  created_at     bigint not null default now_ms(),
  updated_at     bigint not null default now_ms(),
  primary key (tenant_id, id)
);
create index admin_policies_enabled on admin_policies (tenant_id, priority desc) where enabled;

-- A machine access principal is backed by one private_key_jwt client (same client_id) whose jwks,
-- permissions, tenant_scopes and access_token_ttl are maintained from this row and its credentials.
create table machine_principals (
  tenant_id         text not null references tenants(id) on delete cascade,
  id                text not null,
  client_id         text not null unique,
  display_name      text not null,
  description       text,
  principal_type    text not null check (principal_type in ('setup_tool', 'admin_ui_bff', 'automation', 'ci', 'mcp_server', 'ai_agent', 'internal_service', 'integration')),
  status            text not null default 'active' check (status in ('active', 'disabled', 'deleted')),
  token_ttl_seconds bigint not null,
  permissions       text[] not null default '{}',
  tenant_scopes     jsonb not null default '[]',
  created_at        bigint not null default now_ms(),
  updated_at        bigint not null default now_ms(),
  primary key (tenant_id, id)
);
create index machine_principals_list on machine_principals (tenant_id, created_at desc, id desc);

create table principal_credentials (
  tenant_id      text not null,
  id             text not null,
  principal_id   text not null,
  kid            text not null,
  public_jwk     jsonb not null,
  alg            text not null check (alg in ('ES256', 'PS256', 'RS256')),
  display_name   text not null,
  description    text,
  -- Stored status is active, rotating or revoked; expired is derived from expires_at when read.
  status         text not null check (status in ('active', 'rotating', 'revoked', 'expired')),
  not_before     bigint,
  expires_at     bigint,
  created_at     bigint not null default now_ms(),
  updated_at     bigint not null default now_ms(),
  primary key (tenant_id, id),
  unique (tenant_id, principal_id, kid),
  foreign key (tenant_id, principal_id) references machine_principals (tenant_id, id) on delete cascade
);

-- The plaintext key is shown once; only its keyed hash (HMAC-SHA-256) is stored.
create table check_api_keys (
  tenant_id          text not null references tenants(id) on delete cascade,
  id                 text not null,
  client_id          text not null,
  name               text not null,
  key_prefix         text not null,
  key_hash           bytea not null unique,
  allowed_operations text[] not null,
  rate_limit_tier    text not null check (rate_limit_tier in ('strict', 'moderate', 'lenient')),
  is_active          boolean not null default true,
  expires_at         bigint,
  created_by         text,
  revoked_at         bigint,
  created_at         bigint not null default now_ms(),
  updated_at         bigint not null default now_ms(),
  primary key (tenant_id, id)
);
create index check_api_keys_list on check_api_keys (tenant_id, created_at desc, id desc);

-- Platform-wide settings (not tenant data): e.g. the authorization code shard count that a global
-- refresh token resharding must match.
create table platform_settings (
  key        text primary key,
  value      jsonb not null,
  updated_at bigint not null default now_ms(),
  updated_by text not null default 'system'
);
insert into platform_settings (key, value) values ('auth_code_shard_count', '16');
