-- Log pipeline (issue 13): records waiting for their chunk, the per-(tenant, log_type, plane) key
-- registries and their versions, destinations with their credential versions, the chunk catalog and
-- rewrap jobs. Key material and credentials are sealed under KEY_ENCRYPTION_KEY (AES-256-GCM, bound
-- to their row by the AAD) and never returned.

-- A record is here until the chunk it belongs to is committed (then it is deleted: acknowledged).
-- `chunk_id` is set when a pending chunk claims it, so a crash between claim and commit leaves the
-- record with its pending chunk, which the next archive run finishes. `metered`: counted in usage on
-- append (buffered records); records written inside a business transaction are counted at commit.
-- No foreign key to tenants, like admin_audit_log: an audit entry about a tenant being purged must still be written.
create table log_records (
  tenant_id  text not null,
  id         bigserial,
  log_type   text not null check (log_type in ('admin_audit', 'security', 'auth', 'token', 'webhook_delivery')),
  plane      text not null check (plane in ('control', 'data')),
  lane       text not null check (lane in ('critical', 'default', 'bulk')),
  ts         bigint not null,
  body       jsonb not null,
  metered    boolean not null default false,
  chunk_id   text,
  primary key (tenant_id, id)
);
create index log_records_unclaimed on log_records (id) where chunk_id is null;
create index log_records_chunk on log_records (tenant_id, chunk_id) where chunk_id is not null;

create table log_key_registries (
  tenant_id      text not null references tenants(id) on delete cascade,
  id             text not null,
  log_type       text not null,
  plane          text not null,
  active_version integer not null,
  created_at     bigint not null default now_ms(),
  updated_at     bigint not null default now_ms(),
  primary key (tenant_id, id),
  unique (tenant_id, log_type, plane)
);

create table log_key_versions (
  tenant_id   text not null references tenants(id) on delete cascade,
  registry_id text not null,
  version     integer not null check (version >= 1),
  status      text not null check (status in ('active', 'retired', 'rewrap_required', 'compromised')),
  key_enc     bytea not null,
  created_at  bigint not null default now_ms(),
  updated_at  bigint not null default now_ms(),
  primary key (tenant_id, registry_id, version),
  foreign key (tenant_id, registry_id) references log_key_registries (tenant_id, id) on delete cascade
);

create table log_destinations (
  tenant_id         text not null references tenants(id) on delete cascade,
  id                text not null,
  scope             text not null check (scope in ('platform', 'tenant')),
  kind              text not null check (kind in ('filesystem', 'http_sink')),
  name              text not null,
  config            jsonb not null default '{}',
  enabled           boolean not null default true,
  health            text not null default 'unknown' check (health in ('unknown', 'healthy', 'degraded', 'failing')),
  health_detail     text,
  health_checked_at bigint,
  rotation_state    text not null default 'idle' check (rotation_state in ('idle', 'prepared', 'overlap')),
  created_at        bigint not null default now_ms(),
  updated_at        bigint not null default now_ms(),
  primary key (tenant_id, id)
);
create index log_destinations_platform on log_destinations (scope) where scope = 'platform';

create table log_destination_credentials (
  tenant_id      text not null references tenants(id) on delete cascade,
  destination_id text not null,
  version        integer not null check (version >= 1),
  status         text not null check (status in ('next', 'current', 'previous', 'retired', 'aborted')),
  backend        text not null check (backend in ('encrypted_object_store', 'encrypted_table')),
  content_type   text,
  secret_enc     bytea,        -- encrypted_table: the sealed secret
  object_path    text,         -- encrypted_object_store: the sealed file
  created_at     bigint not null default now_ms(),
  activated_at   bigint,
  retire_after   bigint,
  retired_at     bigint,
  primary key (tenant_id, destination_id, version),
  foreign key (tenant_id, destination_id) references log_destinations (tenant_id, id) on delete cascade
);

create table log_chunks (
  tenant_id      text not null references tenants(id) on delete cascade,
  id             text not null,
  log_type       text not null,
  plane          text not null,
  hour_start     bigint not null,
  status         text not null check (status in ('pending', 'committed')),
  record_count   integer not null,
  byte_count     bigint,               -- size of the stored object
  plain_bytes    bigint,
  sha256         text,                 -- of the plaintext (gzip input)
  key_registry_id text,
  key_version    integer,
  object_key     text,
  destination_id text,                 -- the filesystem destination holding the object (null: the default directory)
  delivered      jsonb not null default '[]',
  created_at     bigint not null default now_ms(),
  committed_at   bigint,
  primary key (tenant_id, id)
);
create index log_chunks_list on log_chunks (tenant_id, created_at desc, id desc);
create index log_chunks_pending on log_chunks (created_at) where status = 'pending';
create index log_chunks_key on log_chunks (tenant_id, key_registry_id, key_version) where status = 'committed';

create table log_rewrap_jobs (
  tenant_id       text not null references tenants(id) on delete cascade,
  id              text not null,
  batch_id        text not null,
  key_registry_id text not null,
  chunk_id        text not null,
  from_version    integer not null,
  to_version      integer,
  status          text not null default 'queued' check (status in ('queued', 'running', 'succeeded', 'failed')),
  error           text,
  created_at      bigint not null default now_ms(),
  updated_at      bigint not null default now_ms(),
  primary key (tenant_id, id)
);
-- One open job per chunk: a second request for the same chunk is a duplicate.
create unique index log_rewrap_jobs_open on log_rewrap_jobs (tenant_id, chunk_id) where status in ('queued', 'running');
create index log_rewrap_jobs_batch on log_rewrap_jobs (tenant_id, batch_id);
