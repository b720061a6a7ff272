-- Issue 14 item 5: rotation of the lookup-HMAC key that indexes users by email (user_email_index).
-- Environment-wide (not per tenant): one key serves every tenant's index.

-- The keys of the control plane: public metadata, and the material only when it was generated here
-- (sealed under a key derived from KEY_ENCRYPTION_KEY). `source` says where a process finds the key:
-- `initial` (LOOKUP_HMAC_KEY_A or derived from KEY_ENCRYPTION_KEY, generation 1), `environment`
-- (LOOKUP_HMAC_KEY_<slot>) or `generated` (the sealed column). A retired key's material is erased.
create table lookup_hmac_keys (
  generation  int primary key check (generation >= 1),
  key_id      text not null unique check (key_id ~ '^[a-zA-Z0-9][a-zA-Z0-9._:-]*$' and length(key_id) <= 128),
  slot        text not null check (slot in ('A', 'B')),
  fingerprint text not null check (fingerprint ~ '^[a-f0-9]{64}$'),
  source      text not null check (source in ('initial', 'environment', 'generated')),
  sealed      bytea,
  status      text not null check (status in ('current', 'candidate', 'retired')),
  created_at  bigint not null default now_ms(),
  retired_at  bigint
);
create unique index lookup_hmac_keys_one_current on lookup_hmac_keys ((true)) where status = 'current';

-- One row per rotation. `finished_at` is set when nothing remains to be done (complete and its old
-- entries deleted; blocked and rolled back): at most one unfinished rotation per environment.
create table lookup_hmac_rotations (
  operation_id               text primary key check (operation_id ~ '^[a-zA-Z0-9][a-zA-Z0-9._:-]*$' and length(operation_id) <= 128),
  -- The tenant of the platform administrator who started it: its events go to that tenant's outbox.
  -- Not `tenant_id`: the rotation is environment-wide and must not go with a purged tenant.
  event_tenant_id            text not null,
  state                      text not null check (state in ('planned', 'distributing', 'activation_dual_write', 'dual_read', 'reindexing', 'verifying', 'grace', 'complete', 'blocked')),
  source_generation          int not null references lookup_hmac_keys(generation),
  candidate_generation       int not null references lookup_hmac_keys(generation),
  checkpoint                 jsonb not null default '{}' check (octet_length(checkpoint::text) <= 4096),
  cutoff                     bigint,
  source_row_count           bigint,
  current_row_count          bigint,
  verification_attempt_count int not null default 0,
  grace_ms                   bigint not null check (grace_ms >= 0),
  grace_expires_at           bigint,
  owner_id                   text,
  fencing_token              bigint not null default 1 check (fencing_token >= 1),
  lease_expires_at           bigint,
  mutation_started           boolean not null default false,
  blocked_reason             text,
  started_by                 text not null,
  created_at                 bigint not null default now_ms(),
  updated_at                 bigint not null default now_ms(),
  finished_at                bigint
);
create unique index lookup_hmac_rotations_one_live on lookup_hmac_rotations ((true)) where finished_at is null;
