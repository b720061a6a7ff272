-- Plugin settings per tenant (issue 15): whether a plugin is enabled, its plain settings, and its
-- secret settings sealed (AES-256-GCM under KEY_ENCRYPTION_KEY, bound to tenant and plugin). A plugin
-- without a row is enabled with its defaults.
create table plugin_configs (
  tenant_id    text not null references tenants(id) on delete cascade,
  plugin_id    text not null,
  enabled      boolean not null default true,
  config       jsonb not null default '{}',
  secrets_enc  bytea,
  secret_names text[] not null default '{}',
  updated_at   bigint not null default now_ms(),
  primary key (tenant_id, plugin_id)
);
