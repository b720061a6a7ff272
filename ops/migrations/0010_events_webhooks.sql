-- Events and webhooks (issue 6). Internal timestamps are epoch milliseconds (bigint); the webhook
-- interface reports epoch seconds.

-- Transactional outbox: every domain change writes its event here in the same transaction as the change.
-- The relay (webhook worker process) fans each row out into webhook_deliveries and sets dispatched_at,
-- both in one transaction, so an event is fanned out exactly once whichever process dies when.
create table event_outbox (
  id            bigint generated always as identity primary key,
  tenant_id     text not null references tenants(id) on delete cascade,
  event         text not null,
  data          jsonb not null,
  occurred_at   bigint not null default (extract(epoch from clock_timestamp()) * 1000)::bigint,
  dispatched_at bigint
);
create index event_outbox_undispatched on event_outbox (id) where dispatched_at is null;

create table webhooks (
  tenant_id         text not null references tenants(id) on delete cascade,
  id                text not null,
  name              text not null,
  description       text,
  url               text not null,
  events            text[] not null,
  status            text not null default 'active' check (status in ('active', 'inactive')),
  -- AES-256-GCM under KEY_ENCRYPTION_KEY, bound to (tenant_id, id); never returned after creation.
  secret_enc        bytea not null,
  headers           jsonb not null default '{}',
  timeout_s         integer not null default 30,
  max_retries       integer not null default 5,
  retry_interval_s  integer not null default 30,
  filters           jsonb not null default '{}',
  total_deliveries  bigint not null default 0,
  failed_deliveries bigint not null default 0,
  last_triggered_at bigint,
  last_success_at   bigint,
  last_failure_at   bigint,
  created_at        bigint not null,
  updated_at        bigint not null,
  primary key (tenant_id, id)
);
create index webhooks_tenant_created on webhooks (tenant_id, created_at desc, id desc);
create index webhooks_tenant_events on webhooks using gin (events) where status = 'active';

-- One row per delivery of one event to one webhook; its id is the X-Svc-Delivery header, stable across
-- attempts. The row carries the latest attempt's outcome; every attempt is kept in webhook_delivery_attempts.
create table webhook_deliveries (
  tenant_id        text not null,
  id               text not null,
  webhook_id       text not null,
  outbox_id        bigint,
  event            text not null,
  status           text not null check (status in ('pending', 'success', 'failed')),
  -- Number of the latest (or, while pending, the upcoming) attempt; the delivery stops after max_attempt.
  attempt          integer not null default 1,
  max_attempt      integer not null,
  response_status  integer,
  response_time_ms integer,
  error            text,
  request_body     jsonb not null,
  triggered_at     bigint not null,
  completed_at     bigint,
  next_attempt_at  bigint not null,
  -- Set once the job for the current attempt is in BullMQ; null means the relay must (re-)enqueue it.
  queued_at        bigint,
  primary key (tenant_id, id),
  foreign key (tenant_id, webhook_id) references webhooks (tenant_id, id) on delete cascade,
  unique (tenant_id, webhook_id, outbox_id)
);
create index webhook_deliveries_list on webhook_deliveries (tenant_id, webhook_id, triggered_at desc, id desc);
create index webhook_deliveries_unqueued on webhook_deliveries (next_attempt_at) where status = 'pending' and queued_at is null;
create index webhook_deliveries_pending on webhook_deliveries (next_attempt_at) where status = 'pending';

create table webhook_delivery_attempts (
  tenant_id        text not null,
  delivery_id      text not null,
  attempt          integer not null,
  status           text not null check (status in ('success', 'failed')),
  response_status  integer,
  response_time_ms integer not null,
  error            text,
  started_at       bigint not null,
  completed_at     bigint not null,
  primary key (tenant_id, delivery_id, attempt),
  foreign key (tenant_id, delivery_id) references webhook_deliveries (tenant_id, id) on delete cascade
);

-- Idempotency-Key replay for the synchronous test operation (24 hours).
create table webhook_test_idempotency (
  tenant_id  text not null,
  webhook_id text not null,
  key        text not null,
  result     jsonb,
  created_at bigint not null,
  primary key (tenant_id, webhook_id, key),
  foreign key (tenant_id, webhook_id) references webhooks (tenant_id, id) on delete cascade
);
