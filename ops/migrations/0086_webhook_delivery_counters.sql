-- Issue 21 item 5: total_deliveries / failed_deliveries count deliveries (one event to one webhook),
-- not attempts; attempts are kept in their own counters. A delivery is counted once, when it first
-- ends (success or retries exhausted); `counted` says it was, so a manual retry only moves it from
-- failed to succeeded. Existing counters counted attempts: they become the attempt counters.
alter table webhook_stats add column attempts bigint not null default 0, add column failed_attempts bigint not null default 0;
update webhook_stats set attempts = total, failed_attempts = failed;
update webhook_stats s set total = 0, failed = 0;
alter table webhook_deliveries add column counted boolean not null default false;
-- Deliveries that already ended are counted once each.
insert into webhook_stats (tenant_id, webhook_id, shard, total, failed)
  select tenant_id, webhook_id, 0, count(*), count(*) filter (where status = 'failed') from webhook_deliveries
  where status in ('success', 'failed') group by tenant_id, webhook_id
  on conflict (tenant_id, webhook_id, shard) do update set total = excluded.total, failed = excluded.failed;
update webhook_deliveries set counted = true where status in ('success', 'failed');
