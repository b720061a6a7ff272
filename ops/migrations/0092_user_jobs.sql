-- User import and export jobs (issue 15). The uploaded CSV and the exported CSV are kept in the row
-- (bytea), so any worker host can run a job and an export is removed once downloaded or expired.
-- `processed_rows` is the checkpoint: rows below it are committed together with their users, events,
-- review tasks and import_rows entries, so a killed worker resumes there without duplicates.
create table user_jobs (
  tenant_id      text not null references tenants(id) on delete cascade,
  id             text not null,
  kind           text not null check (kind in ('import', 'export')),
  status         text not null default 'queued' check (status in ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  mapping        json not null, -- json, not jsonb: the column order of columnToPath is the export's column order
  source_csv     bytea,
  result_csv     bytea,
  total_rows     integer,
  processed_rows integer not null default 0,
  created_count  integer not null default 0,
  updated_count  integer not null default 0,
  unchanged_count integer not null default 0,
  rejected_count integer not null default 0,
  review_count   integer not null default 0,
  error_code     text,
  error_message  text,
  created_by     text not null,
  created_at     bigint not null default now_ms(),
  started_at     bigint,
  finished_at    bigint,
  expires_at     bigint,
  downloaded_at  bigint,
  updated_at     bigint not null default now_ms(),
  primary key (tenant_id, id)
);
create index user_jobs_list on user_jobs (tenant_id, kind, created_at desc, id desc);

-- One outcome per import row, written in the batch's transaction: the row-level idempotency record.
create table user_import_rows (
  tenant_id  text not null,
  job_id     text not null,
  row_index  integer not null,
  outcome    text not null check (outcome in ('created', 'updated', 'unchanged', 'rejected', 'review')),
  user_id    text,
  reasons    jsonb not null default '[]',
  primary key (tenant_id, job_id, row_index),
  foreign key (tenant_id, job_id) references user_jobs (tenant_id, id) on delete cascade
);
