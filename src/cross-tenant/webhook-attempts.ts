import type { Sql } from '../sql.js';
import { TOMBSTONE_STATUSES } from '../store/tenants.js';
import { attemptLogBody, STATS_SHARDS, type DeliveryRow, type WebhookRow } from '../store/webhooks.js';

/**
 * The webhook worker's reads and writes, batched over the attempts it has in flight (issue 35): one
 * statement loads the deliveries of many jobs, one statement records the outcomes of many attempts.
 * A batch mixes the jobs of every tenant the worker serves, so it lives here; every row is still
 * named by the (tenant, delivery) pair its own job carries, never by a delivery id alone. What one
 * attempt writes is what WebhookRepository.recordAttempt writes (src/store/webhooks.ts).
 */

/** One job's delivery: the tenant it names and the delivery id. */
export interface AttemptKey { tenantId: string; deliveryId: string }

/** What an attempt needs of its webhook. */
export type AttemptHook = Pick<WebhookRow, 'tenant_id' | 'id' | 'url' | 'status' | 'secret_enc' | 'headers' | 'timeout_s' | 'retry_interval_s'>;

export interface LoadedAttempt { delivery: DeliveryRow; webhook: AttemptHook; tombstoned: boolean }

/** The outcome of one attempt, keyed by its job's tenant, delivery and attempt number. */
export interface AttemptRecord {
  tenantId: string; deliveryId: string; attempt: number; webhookId: string; event: string;
  ok: boolean; responseStatus: number | null; responseTimeMs: number; error: string | null; startedAt: number; completedAt: number;
  /** When the attempt failed and another is allowed: when it is due. */
  nextAttemptAt: number | null;
}

type LoadRow = DeliveryRow & { n: number; w_url: string; w_status: 'active' | 'inactive'; w_secret_enc: Buffer; w_headers: Record<string, string>; w_timeout_s: number; w_retry_interval_s: number; tombstoned: boolean };

const str = (v: number | null) => (v === null ? null : String(v));

export class CrossTenantAttempts {
  constructor(private readonly sql: Sql) {}

  /** The delivery and webhook of each key, in order; null where either is gone. */
  async load(keys: AttemptKey[]): Promise<Array<LoadedAttempt | null>> {
    const out: Array<LoadedAttempt | null> = keys.map(() => null);
    if (!keys.length) return out;
    // Each key is looked up by its primary key (a lateral subquery with a limit is never flattened): a
    // plain join let the planner scan a tenant's deliveries by tenant_id alone once its statistics lagged.
    const rows = await this.sql<LoadRow[]>`
      select k.n::int as n, d.*, w.url as w_url, w.status as w_status, w.secret_enc as w_secret_enc, w.headers as w_headers,
        w.timeout_s as w_timeout_s, w.retry_interval_s as w_retry_interval_s,
        (select t.status from tenants t where t.id = k.tenant_id) = any(${TOMBSTONE_STATUSES as string[]}::text[]) as tombstoned
      from unnest(${keys.map((k) => k.tenantId)}::text[], ${keys.map((k) => k.deliveryId)}::text[]) with ordinality as k(tenant_id, id, n)
      cross join lateral (select * from webhook_deliveries d where d.tenant_id = k.tenant_id and d.id = k.id limit 1) d
      cross join lateral (select * from webhooks w where w.tenant_id = d.tenant_id and w.id = d.webhook_id limit 1) w`;
    for (const r of rows) {
      const { n, w_url, w_status, w_secret_enc, w_headers, w_timeout_s, w_retry_interval_s, tombstoned, ...delivery } = r;
      out[n - 1] = {
        delivery: delivery as DeliveryRow, tombstoned,
        webhook: { tenant_id: r.tenant_id, id: r.webhook_id, url: w_url, status: w_status, secret_enc: w_secret_enc, headers: w_headers, timeout_s: w_timeout_s, retry_interval_s: w_retry_interval_s },
      };
    }
    return out;
  }

  /**
   * Records attempts in one statement (one transaction, one commit): for each one whose delivery is
   * still pending at that attempt and whose tenant is not tombstoned (locked FOR KEY SHARE, as
   * lockLiveTenants does), the attempt row, the delivery's new state, the webhook's counters (one
   * shard per webhook per batch) and the attempt's log record. Answers, in order, whether each was
   * recorded; one that was not (a duplicate job, a tenant being deleted) changes nothing. The same
   * attempt twice in one batch is recorded once.
   */
  async record(items: AttemptRecord[]): Promise<boolean[]> {
    if (!items.length) return [];
    const seen = new Set<string>();
    const firsts = items.map((i) => { const k = `${i.tenantId}\0${i.deliveryId}\0${i.attempt}`; if (seen.has(k)) return false; seen.add(k); return true; });
    const use = items.filter((_, i) => firsts[i]);
    const idx = items.map((_, i) => i).filter((i) => firsts[i]);
    const bodies = use.map((o) => JSON.stringify(attemptLogBody(o)));
    const rows = await this.sql<Array<{ n: number }>>`
      with o as (
        select * from unnest(${use.map((o) => o.tenantId)}::text[], ${use.map((o) => o.deliveryId)}::text[], ${use.map((o) => String(o.attempt))}::text[]::int[],
          ${use.map((o) => String(o.ok))}::text[]::bool[], ${use.map((o) => str(o.responseStatus))}::text[]::int[], ${use.map((o) => String(o.responseTimeMs))}::text[]::int[],
          ${use.map((o) => o.error)}::text[], ${use.map((o) => String(o.startedAt))}::text[]::bigint[], ${use.map((o) => String(o.completedAt))}::text[]::bigint[],
          ${use.map((o) => str(o.nextAttemptAt))}::text[]::bigint[], ${bodies}::text[])
          with ordinality as o(tenant_id, delivery_id, attempt, ok, response_status, response_time_ms, error, started_at, completed_at, next_attempt_at, body, n)),
      live as (
        select id from tenants where id in (select tenant_id from o) and status <> all(${TOMBSTONE_STATUSES as string[]}::text[]) order by id for key share),
      old as (
        select o.*, d.webhook_id, d.was_counted, (not o.ok and o.next_attempt_at is not null) as retry
        from o cross join lateral (
          select d.webhook_id, d.counted as was_counted from webhook_deliveries d
          where d.tenant_id = o.tenant_id and d.id = o.delivery_id and d.status = 'pending' and d.attempt = o.attempt limit 1 for update) d
        where o.tenant_id in (select id from live)),
      upd as (
        update webhook_deliveries w set
          status = case when old.ok then 'success' when old.retry then 'pending' else 'failed' end,
          attempt = case when old.retry then old.attempt + 1 else old.attempt end,
          response_status = old.response_status, response_time_ms = old.response_time_ms, error = old.error,
          completed_at = case when old.retry then null else old.completed_at end,
          next_attempt_at = case when old.retry then old.next_attempt_at else old.completed_at end,
          queued_at = null,
          counted = w.counted or not old.retry
        from old where w.tenant_id = old.tenant_id and w.id = old.delivery_id
        returning 1),
      attempts as (
        insert into webhook_delivery_attempts (tenant_id, delivery_id, attempt, status, response_status, response_time_ms, error, started_at, completed_at)
        select tenant_id, delivery_id, attempt, case when ok then 'success' else 'failed' end, response_status, response_time_ms, error, started_at, completed_at from old
        returning 1),
      stats as (
        insert into webhook_stats (tenant_id, webhook_id, shard, total, failed, attempts, failed_attempts, last_success_at, last_failure_at)
        select tenant_id, webhook_id, ${Math.floor(Math.random() * STATS_SHARDS)},
          -- Deliveries: counted once when they first end; a manual retry that succeeds takes one off failed.
          count(*) filter (where not retry and not was_counted),
          coalesce(sum(case when retry then 0 when not was_counted then (case when ok then 0 else 1 end) else (case when ok then -1 else 0 end) end), 0),
          count(*), count(*) filter (where not ok),
          max(completed_at) filter (where ok), max(completed_at) filter (where not ok)
        from old group by tenant_id, webhook_id
        on conflict (tenant_id, webhook_id, shard) do update set
          total = webhook_stats.total + excluded.total,
          failed = webhook_stats.failed + excluded.failed,
          attempts = webhook_stats.attempts + excluded.attempts,
          failed_attempts = webhook_stats.failed_attempts + excluded.failed_attempts,
          last_success_at = greatest(webhook_stats.last_success_at, excluded.last_success_at),
          last_failure_at = greatest(webhook_stats.last_failure_at, excluded.last_failure_at)
        returning 1),
      -- The attempt as a log record (src/logging/pipeline.ts recordLogsInTx), archived if and only if it was recorded.
      logs as (
        insert into log_records (tenant_id, log_type, plane, lane, ts, body, metered)
        select tenant_id, 'webhook_delivery', 'control', 'default', completed_at, body::jsonb, false from old order by n
        returning 1)
      select n::int as n from old`;
    const done = items.map(() => false);
    for (const r of rows) done[idx[r.n - 1]!] = true;
    return done;
  }
}
