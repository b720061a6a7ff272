-- Tokens: signing keys, OAuth clients, durable revocation, refresh tokens, shard generations.
create function now_ms() returns bigint language sql stable as $$ select (extract(epoch from clock_timestamp()) * 1000)::bigint $$;

-- Private keys are AES-256-GCM encrypted under KEY_ENCRYPTION_KEY; only public JWKs leave the server.
create table signing_keys (
  kid              text primary key,
  alg              text not null check (alg in ('RS256', 'ES256', 'PS256')),
  public_jwk       jsonb not null,
  private_key_enc  bytea not null,
  status           text not null check (status in ('next', 'active', 'retired')),
  created_at       bigint not null default now_ms(),
  activated_at     bigint,
  retired_at       bigint,
  -- A retired key stays published until every token it signed has expired.
  verify_until     bigint
);
create unique index signing_keys_one_active on signing_keys (alg) where status = 'active';

create table clients (
  client_id                  text primary key,
  tenant_id                  text not null references tenants(id) on delete cascade,
  name                       text not null,
  -- HMAC-SHA-256 of a server-generated secret under a key derived from KEY_ENCRYPTION_KEY.
  secret_hash                bytea,
  token_endpoint_auth_method text not null default 'client_secret_basic'
    check (token_endpoint_auth_method in ('client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none')),
  grant_types                text[] not null default '{}',
  scopes                     text[] not null default '{}',
  redirect_uris              text[] not null default '{}',
  post_logout_redirect_uris  text[] not null default '{}',
  allowed_audiences          text[] not null default '{}',
  audience                   text,
  strict_validation          boolean not null default false,
  can_introspect             boolean not null default false,
  first_party                boolean not null default false,
  access_token_ttl           integer,
  refresh_token_ttl          integer,
  jwks                       jsonb,
  permissions                text[] not null default '{}',
  tenant_scopes              jsonb not null default '[]',
  status                     text not null default 'active' check (status in ('active', 'disabled')),
  created_at                 bigint not null default now_ms(),
  updated_at                 bigint not null default now_ms()
);
create index clients_tenant on clients (tenant_id);

-- Durable record of revoked token ids; Redis holds the fast copy and is refilled from here.
create table revocations (
  jti         text primary key,
  tenant_id   text not null,
  expires_at  bigint not null,
  created_at  bigint not null default now_ms()
);
create index revocations_expiry on revocations (expires_at);

-- "Everything issued to this user/client before this moment is revoked."
create table revocation_marks (
  tenant_id    text not null,
  subject_kind text not null check (subject_kind in ('sub', 'client')),
  subject_id   text not null,
  not_before   bigint not null,
  expires_at   bigint not null,
  primary key (tenant_id, subject_kind, subject_id)
);

create table token_shard_generations (
  generation    integer not null,
  client_id     text not null default '',
  shard_count   integer not null check (shard_count between 1 and 16384),
  activated_at  bigint not null default now_ms(),
  deprecated_at bigint,
  created_by    text not null default 'system',
  notes         text,
  primary key (client_id, generation)
);
insert into token_shard_generations (generation, shard_count, created_by, notes) values (1, 16, 'system', 'initial generation');

create table refresh_tokens (
  id          text primary key,          -- SHA-256 of the token
  tenant_id   text not null,
  client_id   text not null,
  sub         text not null,
  scope       text not null default '',
  family_id   text not null,
  generation  integer not null,
  shard       integer not null,
  status      text not null check (status in ('active', 'rotated', 'revoked')),
  access_jti  text,
  auth_time   bigint,
  claims      jsonb not null default '{}',
  expires_at  bigint not null,
  created_at  bigint not null default now_ms(),
  used_at     bigint
);
create index refresh_tokens_family on refresh_tokens (family_id);
create index refresh_tokens_subject on refresh_tokens (tenant_id, sub);
