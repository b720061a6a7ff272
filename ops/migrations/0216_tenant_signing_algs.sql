-- Issue 35 item 1: signing algorithms per tenant. A tenant with the `signing_algs` setting signs with keys
-- of its own (one active and one published next key per algorithm it enables); a tenant without it keeps
-- the deployment's keys (signing_keys, TOKEN_SIGNING_ALG). Ed25519 keys are stored as alg 'EdDSA'.
alter table signing_keys drop constraint if exists signing_keys_alg_check;
alter table signing_keys add constraint signing_keys_alg_check check (alg in ('RS256', 'ES256', 'PS256', 'EdDSA'));

create table tenant_signing_keys (
  tenant_id        text not null references tenants(id) on delete cascade,
  kid              text not null,
  alg              text not null check (alg in ('RS256', 'ES256', 'PS256', 'EdDSA')),
  -- The algorithm's place in the tenant's `signing_algs` (0 signs by default); null once retired.
  rank             smallint,
  public_jwk       jsonb not null,
  private_key_enc  bytea not null,
  status           text not null check (status in ('next', 'active', 'retired')),
  created_at       bigint not null default now_ms(),
  activated_at     bigint,
  retired_at       bigint,
  -- A retired key stays published, and verifies the tenant's tokens, until every token it signed has expired.
  verify_until     bigint,
  primary key (tenant_id, kid)
);
create unique index tenant_signing_keys_one_active on tenant_signing_keys (tenant_id, alg) where status = 'active';
create unique index tenant_signing_keys_kid on tenant_signing_keys (kid);

-- Until when a tenant that moved to keys of its own still accepts the deployment keys' tokens issued
-- to it before the move (null: not moved, or long past).
alter table tenants add column shared_keys_until bigint;

-- OpenID Connect Dynamic Client Registration 2: the algorithm a client wants its ID tokens signed with.
alter table clients add column id_token_signed_response_alg text;
