-- Log usage aggregates, quota policies and evaluations (issue 13 items 4 and 5).

-- Usage windows per (tenant, tenant_key, log_type, plane, lane, metric). `minute` rows hold the absolute
-- value of a Redis minute counter (upserted, so a rollup run twice or after a crash writes the same);
-- hour/day/month rows are recomputed from the minute rows of their window (UTC boundaries).
-- tenant_key '' stands for "none" (reported as null).
create table log_usage_aggregates (
  tenant_id       text not null references tenants(id) on delete cascade,
  id              text not null,
  tenant_key      text not null default '',
  log_type        text not null,
  plane           text not null,
  lane            text not null,
  metric_name     text not null check (metric_name in ('records', 'bytes', 'chunks', 'dropped_records')),
  window_kind     text not null check (window_kind in ('minute', 'hour', 'day', 'month')),
  window_start_at bigint not null,
  window_end_at   bigint not null,
  value           bigint not null,
  final           boolean not null default false,
  created_at      bigint not null default now_ms(),
  updated_at      bigint not null default now_ms(),
  primary key (tenant_id, id),
  unique (tenant_id, tenant_key, log_type, plane, lane, metric_name, window_kind, window_start_at)
);
create index log_usage_aggregates_window on log_usage_aggregates (tenant_id, window_kind, window_start_at desc);

create table log_quota_policies (
  tenant_id        text not null references tenants(id) on delete cascade,
  id               text not null,
  name             text,
  scope            text not null check (scope in ('platform', 'tenant')),
  log_type         text,
  plane            text,
  lane             text,
  metric_name      text not null,
  window_kind      text not null check (window_kind in ('minute', 'hour', 'day', 'month')),
  soft_limit       bigint,
  hard_limit       bigint not null,
  warning_ratio    double precision not null default 0.8,
  enforcement_mode text not null check (enforcement_mode in ('observe', 'notify', 'throttle_non_critical', 'block_non_critical')),
  active           boolean not null default true,
  created_at       bigint not null default now_ms(),
  updated_at       bigint not null default now_ms(),
  primary key (tenant_id, id)
);
create index log_quota_policies_active on log_quota_policies (active) where active;

-- Append-only: one row per policy per evaluation run.
create table log_quota_evaluations (
  tenant_id             text not null references tenants(id) on delete cascade,
  id                    text not null,
  quota_policy_id       text not null,
  tenant_key            text,
  log_type              text,
  plane                 text,
  lane                  text,
  metric_name           text not null,
  window_kind           text not null,
  window_start_at       bigint not null,
  window_end_at         bigint not null,
  value                 bigint not null,
  soft_limit            bigint,
  hard_limit            bigint not null,
  state                 text not null check (state in ('ok', 'warning', 'soft_exceeded', 'hard_exceeded')),
  enforcement_action    text not null check (enforcement_action in ('none', 'notify', 'throttle_non_critical', 'block_non_critical')),
  evaluated_at          bigint not null,
  notification_event_id text,
  metadata              jsonb not null default '{}',
  primary key (tenant_id, id)
);
create index log_quota_evaluations_list on log_quota_evaluations (tenant_id, evaluated_at desc, id desc);
create index log_quota_evaluations_policy on log_quota_evaluations (quota_policy_id, evaluated_at desc);

-- One notification per (policy, window, state): the outbox event id it was written as.
create table log_quota_notifications (
  tenant_id       text not null references tenants(id) on delete cascade,
  quota_policy_id text not null,
  window_start_at bigint not null,
  state           text not null,
  event_id        bigint not null,
  created_at      bigint not null default now_ms(),
  primary key (tenant_id, quota_policy_id, window_start_at, state)
);
