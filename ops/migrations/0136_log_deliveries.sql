-- Issue 29 item 11: http_sink deliveries as durable work, retried until the sink takes the object.

-- One row per (chunk, http_sink, object): `pending` until the sink answers 2xx (`delivered`), or until a
-- rewrap replaces the object (`superseded`; the re-encrypted copy has its own row naming the one it
-- supersedes). The log worker claims due rows (next_attempt_at <= now, pushed forward by a lease while an
-- attempt runs) and backs off after a failure. `tenant_id` is the chunk's; a platform sink's rows are
-- in every tenant, so `destination_id` has no foreign key (a deleted destination's rows are deleted with it).
create table log_deliveries (
  tenant_id              text not null references tenants(id) on delete cascade,
  id                     bigserial,
  chunk_id               text not null,
  destination_id         text not null,
  object_key             text not null,
  key_version            integer not null,
  supersedes_object_key  text,
  supersedes_key_version integer,
  status                 text not null default 'pending' check (status in ('pending', 'delivered', 'superseded')),
  attempts               integer not null default 0,
  next_attempt_at        bigint not null default now_ms(),
  last_attempt_at        bigint,
  last_status            integer,
  last_error             text,
  created_at             bigint not null default now_ms(),
  delivered_at           bigint,
  primary key (tenant_id, id),
  unique (tenant_id, chunk_id, destination_id, object_key),
  foreign key (tenant_id, chunk_id) references log_chunks (tenant_id, id) on delete cascade
);
create index log_deliveries_due on log_deliveries (destination_id, next_attempt_at, id) where status = 'pending';
create index log_deliveries_chunk on log_deliveries (tenant_id, chunk_id);

-- Deliveries recorded before: a failed one is now pending (sent again), a successful one delivered.
insert into log_deliveries (tenant_id, chunk_id, destination_id, object_key, key_version, status, attempts, last_attempt_at, last_status, last_error, delivered_at)
select c.tenant_id, c.id, e->>'destination_id', c.object_key, c.key_version,
    case when (e->>'ok')::boolean then 'delivered' else 'pending' end, 1, c.committed_at,
    (e->>'status')::integer, e->>'error', case when (e->>'ok')::boolean then c.committed_at end
  from log_chunks c cross join lateral jsonb_array_elements(c.delivered) e
  join log_destinations d on d.id = e->>'destination_id' and d.kind = 'http_sink'
  where c.status = 'committed' and c.object_key is not null
  on conflict do nothing;
update log_chunks c set delivered = coalesce((select jsonb_agg(e) from jsonb_array_elements(c.delivered) e
    where not exists (select 1 from log_destinations d where d.id = e->>'destination_id' and d.kind = 'http_sink')), '[]')
  where exists (select 1 from log_deliveries l where l.tenant_id = c.tenant_id and l.chunk_id = c.id);
