-- Field-mapping review tasks (issue 15): a doubtful import row (a warning, or a match with an existing
-- user on a conflicting field) waits for a human. The pending change is the mapped row the task would
-- apply when approved; it is discarded when the task is rejected or dismissed.

create table review_tasks (
  tenant_id      text not null references tenants(id) on delete cascade,
  id             text not null,
  task_type      text not null check (task_type in ('import_warning', 'import_conflict')),
  status         text not null default 'open' check (status in ('open', 'in_review', 'approved', 'rejected', 'resolved', 'dismissed')),
  assigned_to    text,
  reason_codes   text[] not null default '{}',
  reasons        jsonb not null default '[]',
  job_id         text,
  row_index      integer,
  user_id        text,
  pending_change jsonb,
  created_at     bigint not null default now_ms(),
  updated_at     bigint not null default now_ms(),
  primary key (tenant_id, id)
);
create index review_tasks_list on review_tasks (tenant_id, created_at desc, id desc);
create index review_tasks_status on review_tasks (tenant_id, status, created_at desc);
-- One task per import row: a resumed import worker cannot create a second one.
create unique index review_tasks_job_row on review_tasks (tenant_id, job_id, row_index) where job_id is not null;

-- Idempotency-Key of a transition: the key, a fingerprint of the body, and the first answer.
create table review_task_idempotency (
  tenant_id   text not null references tenants(id) on delete cascade,
  task_id     text not null,
  key         text not null,
  body_hash   text not null,
  result      jsonb not null,
  created_at  bigint not null default now_ms(),
  primary key (tenant_id, task_id, key)
);
