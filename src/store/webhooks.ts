import type { Cursor } from './cursor.js';
import type { Db } from '../sql.js';
import { insertLogRecords } from './log-archive.js';

export interface WebhookRow {
  tenant_id: string; id: string; name: string; description: string | null; url: string; events: string[];
  status: 'active' | 'inactive'; secret_enc: Buffer; headers: Record<string, string>; timeout_s: number;
  max_retries: number; retry_interval_s: number; filters: Record<string, Record<string, unknown>>;
  total_deliveries: number; failed_deliveries: number; total_attempts: number; failed_attempts: number; last_triggered_at: number | null; last_success_at: number | null;
  last_failure_at: number | null; created_at: number; updated_at: number;
}

/** The stored (and delivered) body of a delivery: `{event, timestamp (ISO 8601 UTC), data}`. */
export interface RequestBody { event: string; timestamp: string; data: Record<string, unknown> }

export interface DeliveryRow {
  tenant_id: string; id: string; webhook_id: string; outbox_id: number | null; event: string;
  status: 'pending' | 'success' | 'failed'; attempt: number; max_attempt: number; response_status: number | null;
  response_time_ms: number | null; error: string | null; request_body: RequestBody; triggered_at: number;
  completed_at: number | null; next_attempt_at: number; queued_at: number | null;
  /** The traceparent of the request whose event this delivers (tracing on and sampled), else null. */
  trace_context?: string | null;
}

export interface AttemptRow {
  attempt: number; status: 'success' | 'failed'; response_status: number | null; response_time_ms: number;
  error: string | null; started_at: number; completed_at: number;
}

/** What an administrator writes; the signing secret is stored sealed (src/webhooks/secret-box.ts). */
export interface WebhookFields {
  name: string; description?: string | undefined; url: string; events: string[];
  headers?: Record<string, string | undefined> | undefined; timeout?: number | undefined;
  retry_policy?: { max_retries?: number | undefined; retry_interval?: number | undefined } | undefined;
  filters?: Record<string, Record<string, unknown> | undefined> | undefined;
}

/** The fields given replace the stored ones; `secretEnc` replaces the sealed secret. */
export type WebhookChange = Partial<WebhookFields> & { status?: 'active' | 'inactive' | undefined; secretEnc?: Buffer | undefined };

export interface DeliveryFilter { limit: number; cursor?: Cursor | undefined; status?: string | undefined; event?: string | undefined }

export interface AttemptOutcome {
  ok: boolean; responseStatus: number | null; responseTimeMs: number; error: string | null; startedAt: number; completedAt: number;
  /** When the attempt failed and another is allowed: when it is due. */
  nextAttemptAt: number | null;
}

/** A test send as the delivery log records it (src/webhooks/test-send.ts): one attempt, already ended. */
/**
 * A delivery attempt as the body of its log record (log type `webhook_delivery`, lane default): the
 * same for the worker's attempts (src/cross-tenant/webhook-attempts.ts) and test sends.
 */
export function attemptLogBody(a: { webhookId: string; deliveryId: string; event: string; attempt: number; ok: boolean; responseStatus: number | null; responseTimeMs: number; error: string | null }): Record<string, unknown> {
  return { webhook_id: a.webhookId, delivery_id: a.deliveryId, event: a.event, attempt: a.attempt, success: a.ok, response_status: a.responseStatus, duration_ms: a.responseTimeMs, error: a.error };
}

export interface TestDelivery {
  id: string; webhookId: string; event: string; requestBody: RequestBody; ok: boolean; responseStatus: number | null;
  responseTimeMs: number; error: string | null; startedAt: number; completedAt: number;
}

export const DEFAULT_MAX_RETRIES = 5;
export const DEFAULT_RETRY_INTERVAL_S = 30;
export const DEFAULT_TIMEOUT_S = 30;
/** Counter shards per webhook (migration 0011): each attempt increments one at random. */
export const STATS_SHARDS = 16;

/**
 * Webhooks of one tenant with their deliveries, attempts and test Idempotency-Keys. Every query is
 * filtered by the tenant the repository was created for. Work across tenants (the relay's fan-out and
 * enqueue) lives apart, in ./webhook-deliveries.ts.
 */
export class WebhookRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  async insert(id: string, f: WebhookFields, secretEnc: Buffer): Promise<WebhookRow> {
    const db = this.db;
    const now = Date.now();
    const [row] = await db<WebhookRow[]>`
      insert into webhooks (tenant_id, id, name, description, url, events, status, secret_enc, headers, timeout_s,
        max_retries, retry_interval_s, filters, created_at, updated_at)
      values (${this.tenantId}, ${id}, ${f.name}, ${f.description ?? null}, ${f.url}, ${f.events}, 'active',
        ${secretEnc}, ${db.json((f.headers ?? {}) as never)}, ${f.timeout ?? DEFAULT_TIMEOUT_S},
        ${f.retry_policy?.max_retries ?? DEFAULT_MAX_RETRIES}, ${f.retry_policy?.retry_interval ?? DEFAULT_RETRY_INTERVAL_S},
        ${db.json((f.filters ?? {}) as never)}, ${now}, ${now})
      returning *`;
    return { ...row!, total_deliveries: 0, failed_deliveries: 0, total_attempts: 0, failed_attempts: 0, last_success_at: null, last_failure_at: null };
  }

  /** One webhook with its delivery counters; `lock` holds its row until the transaction ends. */
  async get(id: string, opts: { lock?: boolean } = {}): Promise<WebhookRow | null> {
    const db = this.db;
    // (Counters live in webhook_stats, so the row lock never blocks deliveries.)
    const [row] = await db<WebhookRow[]>`
      select w.*, s.* from webhooks w, lateral (${this.statsOf()}) s where w.tenant_id = ${this.tenantId} and w.id = ${id}
      ${opts.lock ? db`for update of w` : db``}`;
    return row ?? null;
  }

  /** Newest first, keyset-paginated; returns limit+1 rows so the caller knows whether there is more. */
  list(f: { limit: number; cursor?: Cursor | undefined; status?: string | undefined }): Promise<WebhookRow[]> {
    const db = this.db;
    return db<WebhookRow[]>`
      select w.*, s.* from webhooks w, lateral (${this.statsOf()}) s
      where w.tenant_id = ${this.tenantId}
        ${f.status ? db`and w.status = ${f.status}` : db``}
        ${f.cursor ? db`and (w.created_at, w.id) < (${f.cursor.createdAt}, ${f.cursor.id})` : db``}
      order by w.created_at desc, w.id desc limit ${f.limit + 1}`;
  }

  async count(f: { status?: string | undefined } = {}): Promise<number> {
    const db = this.db;
    const [r] = await db<{ total: number }[]>`
      select count(*)::int as total from webhooks where tenant_id = ${this.tenantId} ${f.status ? db`and status = ${f.status}` : db``}`;
    return r!.total;
  }

  /** Applies the given fields; null when there is no such webhook. */
  async update(id: string, p: WebhookChange): Promise<WebhookRow | null> {
    const db = this.db;
    const rows = await db`
      update webhooks set
        name = ${p.name ?? db`name`},
        description = ${p.description !== undefined ? p.description : db`description`},
        url = ${p.url ?? db`url`},
        events = ${p.events ?? db`events`},
        status = ${p.status ?? db`status`},
        secret_enc = ${p.secretEnc ?? db`secret_enc`},
        headers = ${p.headers ? db.json(p.headers as never) : db`headers`},
        timeout_s = ${p.timeout ?? db`timeout_s`},
        max_retries = ${p.retry_policy?.max_retries ?? db`max_retries`},
        retry_interval_s = ${p.retry_policy?.retry_interval ?? db`retry_interval_s`},
        filters = ${p.filters ? db.json(p.filters as never) : db`filters`},
        updated_at = ${Date.now()}
      where tenant_id = ${this.tenantId} and id = ${id}
      returning id`;
    return rows.length ? this.get(id) : null;
  }

  /** Deletes a webhook with its deliveries, attempts and counters; false when there was none. */
  async delete(id: string): Promise<boolean> {
    const rows = await this.db`delete from webhooks where tenant_id = ${this.tenantId} and id = ${id} returning id`;
    return rows.length > 0;
  }

  /** Deliveries of a webhook, newest first by trigger time; limit+1 rows. */
  deliveries(webhookId: string, f: DeliveryFilter): Promise<DeliveryRow[]> {
    const db = this.db;
    return db<DeliveryRow[]>`
      select * from webhook_deliveries
      where tenant_id = ${this.tenantId} and webhook_id = ${webhookId} ${this.deliveryFilter(f)}
        ${f.cursor ? db`and (triggered_at, id) < (${f.cursor.createdAt}, ${f.cursor.id})` : db``}
      order by triggered_at desc, id desc limit ${f.limit + 1}`;
  }

  async countDeliveries(webhookId: string, f: Omit<DeliveryFilter, 'limit' | 'cursor'>): Promise<number> {
    const [r] = await this.db<{ total: number }[]>`
      select count(*)::int as total from webhook_deliveries
      where tenant_id = ${this.tenantId} and webhook_id = ${webhookId} ${this.deliveryFilter(f)}`;
    return r!.total;
  }

  /** One delivery of a webhook with every attempt, oldest first. */
  async delivery(webhookId: string, deliveryId: string): Promise<{ delivery: DeliveryRow; attempts: AttemptRow[] } | null> {
    const [delivery] = await this.db<DeliveryRow[]>`
      select * from webhook_deliveries where tenant_id = ${this.tenantId} and webhook_id = ${webhookId} and id = ${deliveryId}`;
    if (!delivery) return null;
    return { delivery, attempts: await this.attempts(deliveryId) };
  }

  /**
   * Manual retry: a failed delivery becomes pending for one more attempt (no further automatic retries),
   * due at nowMs. The relay enqueues it (queued_at null) within moments.
   */
  async retryDelivery(webhookId: string, deliveryId: string, nowMs: number): Promise<DeliveryRow | 'not_found' | 'not_failed'> {
    const db = this.db;
    const [row] = await db<DeliveryRow[]>`
      update webhook_deliveries set status = 'pending', attempt = attempt + 1, max_attempt = attempt + 1,
        next_attempt_at = ${nowMs}, queued_at = null, completed_at = null
      where tenant_id = ${this.tenantId} and webhook_id = ${webhookId} and id = ${deliveryId} and status = 'failed'
      returning *`;
    if (row) return row;
    const [exists] = await db`select 1 from webhook_deliveries where tenant_id = ${this.tenantId} and webhook_id = ${webhookId} and id = ${deliveryId}`;
    return exists ? 'not_failed' : 'not_found';
  }

  /**
   * Records a test send as an ended delivery of one attempt (no outbox row, nothing queued), with its
   * attempt row, the webhook's counters and the attempt's log record, like a delivery the worker ended
   * (docs/decisions.md). A failed one can be retried like any other (retryDelivery). Run it in one transaction.
   */
  async recordTestDelivery(t: TestDelivery): Promise<void> {
    const db = this.db;
    const status = t.ok ? 'success' : 'failed';
    await db`
      insert into webhook_deliveries (tenant_id, id, webhook_id, outbox_id, event, status, attempt, max_attempt, response_status,
        response_time_ms, error, request_body, triggered_at, completed_at, next_attempt_at, queued_at, counted)
      values (${this.tenantId}, ${t.id}, ${t.webhookId}, null, ${t.event}, ${status}, 1, 1, ${t.responseStatus},
        ${t.responseTimeMs}, ${t.error}, ${db.json(t.requestBody as never)}, ${t.startedAt}, ${t.completedAt}, ${t.completedAt}, null, true)`;
    await db`
      insert into webhook_delivery_attempts (tenant_id, delivery_id, attempt, status, response_status, response_time_ms, error, started_at, completed_at)
      values (${this.tenantId}, ${t.id}, 1, ${status}, ${t.responseStatus}, ${t.responseTimeMs}, ${t.error}, ${t.startedAt}, ${t.completedAt})`;
    const failed = t.ok ? 0 : 1;
    await db`
      insert into webhook_stats (tenant_id, webhook_id, shard, total, failed, attempts, failed_attempts, last_success_at, last_failure_at)
      values (${this.tenantId}, ${t.webhookId}, ${Math.floor(Math.random() * STATS_SHARDS)}, 1, ${failed}, 1, ${failed},
        ${t.ok ? t.completedAt : null}, ${t.ok ? null : t.completedAt})
      on conflict (tenant_id, webhook_id, shard) do update set
        total = webhook_stats.total + 1,
        failed = webhook_stats.failed + excluded.failed,
        attempts = webhook_stats.attempts + 1,
        failed_attempts = webhook_stats.failed_attempts + excluded.failed_attempts,
        last_success_at = greatest(webhook_stats.last_success_at, excluded.last_success_at),
        last_failure_at = greatest(webhook_stats.last_failure_at, excluded.last_failure_at)`;
    // The attempt as a log record, in the same transaction: archived if and only if it committed.
    await insertLogRecords(db, [{
      tenantId: this.tenantId, logType: 'webhook_delivery', plane: 'control', lane: 'default', ts: t.completedAt,
      body: attemptLogBody({ ...t, deliveryId: t.id, attempt: 1 }),
    }], false);
  }

  /** Claims an Idempotency-Key of the test operation; when it was used in the last 24 h, its stored result (null while in flight). */
  /**
   * Claims an Idempotency-Key for a test send; a key already used answers its stored result, or
   * `mismatch` when it was first used with a different request (`requestHash`).
   */
  async claimTestKey(webhookId: string, key: string, nowMs: number, requestHash = ''): Promise<{ claimed: true } | { claimed: false; result: unknown; mismatch?: true }> {
    const db = this.db;
    await db`delete from webhook_test_idempotency
      where tenant_id = ${this.tenantId} and webhook_id = ${webhookId} and key = ${key} and created_at < ${nowMs - 24 * 3600 * 1000}`;
    const ins = await db`
      insert into webhook_test_idempotency (tenant_id, webhook_id, key, created_at, request_hash) values (${this.tenantId}, ${webhookId}, ${key}, ${nowMs}, ${requestHash})
      on conflict do nothing returning 1`;
    if (ins.length) return { claimed: true };
    const [prev] = await db<{ result: unknown; request_hash: string | null }[]>`
      select result, request_hash from webhook_test_idempotency where tenant_id = ${this.tenantId} and webhook_id = ${webhookId} and key = ${key}`;
    const mismatch = prev?.request_hash != null && prev.request_hash !== requestHash;
    return { claimed: false, result: prev?.result ?? null, ...(mismatch ? { mismatch: true as const } : {}) };
  }

  async storeTestResult(webhookId: string, key: string, result: unknown): Promise<void> {
    await this.db`update webhook_test_idempotency set result = ${this.db.json(result as never)}
      where tenant_id = ${this.tenantId} and webhook_id = ${webhookId} and key = ${key}`;
  }

  /** Frees a claimed key whose test never finished, so the caller may try again. */
  async releaseTestKey(webhookId: string, key: string): Promise<void> {
    await this.db`delete from webhook_test_idempotency
      where tenant_id = ${this.tenantId} and webhook_id = ${webhookId} and key = ${key} and result is null`;
  }

  // ---- the delivery worker's side: one job names its tenant and delivery ----

  /** A delivery and its webhook, as the worker needs them; null when either is gone. */
  async loadDelivery(deliveryId: string): Promise<{ delivery: DeliveryRow; webhook: WebhookRow } | null> {
    const [delivery] = await this.db<DeliveryRow[]>`select * from webhook_deliveries where tenant_id = ${this.tenantId} and id = ${deliveryId}`;
    if (!delivery) return null;
    const webhook = await this.get(delivery.webhook_id);
    return webhook ? { delivery, webhook } : null;
  }

  /**
   * Records one attempt: the attempt row, the delivery's new state and the webhook's counters
   * (incremented in SQL, so concurrent workers never lose an update). Run it in one transaction.
   * Returns false when the attempt was already recorded (a duplicate job); then nothing changes.
   */
  async recordAttempt(deliveryId: string, attempt: number, o: AttemptOutcome): Promise<boolean> {
    const db = this.db;
    const retry = !o.ok && o.nextAttemptAt !== null;
    const terminal = !retry;
    // The old `counted` tells a first ending from a manual retry of a delivery already counted as failed.
    const [d] = await db<{ webhook_id: string; was_counted: boolean }[]>`
      update webhook_deliveries w set
        status = ${o.ok ? 'success' : retry ? 'pending' : 'failed'},
        attempt = ${retry ? attempt + 1 : attempt},
        response_status = ${o.responseStatus}, response_time_ms = ${o.responseTimeMs}, error = ${o.error},
        completed_at = ${retry ? null : o.completedAt},
        next_attempt_at = ${retry && o.nextAttemptAt !== null ? o.nextAttemptAt : o.completedAt},
        queued_at = null,
        counted = w.counted or ${terminal}
      from (select id, counted as was_counted from webhook_deliveries
            where tenant_id = ${this.tenantId} and id = ${deliveryId} and status = 'pending' and attempt = ${attempt} for update) old
      where w.tenant_id = ${this.tenantId} and w.id = old.id
      returning w.webhook_id, old.was_counted`;
    if (!d) return false;
    await db`
      insert into webhook_delivery_attempts (tenant_id, delivery_id, attempt, status, response_status, response_time_ms, error, started_at, completed_at)
      values (${this.tenantId}, ${deliveryId}, ${attempt}, ${o.ok ? 'success' : 'failed'}, ${o.responseStatus}, ${o.responseTimeMs}, ${o.error}, ${o.startedAt}, ${o.completedAt})`;
    const shard = Math.floor(Math.random() * STATS_SHARDS);
    const success = o.ok ? o.completedAt : null;
    const failure = o.ok ? null : o.completedAt;
    // Deliveries: counted once when they first end; a manual retry that succeeds takes one off failed.
    const total = terminal && !d.was_counted ? 1 : 0;
    const failed = !terminal ? 0 : !d.was_counted ? (o.ok ? 0 : 1) : (o.ok ? -1 : 0);
    await db`
      insert into webhook_stats (tenant_id, webhook_id, shard, total, failed, attempts, failed_attempts, last_success_at, last_failure_at)
      values (${this.tenantId}, ${d.webhook_id}, ${shard}, ${total}, ${failed}, 1, ${o.ok ? 0 : 1}, ${success}, ${failure})
      on conflict (tenant_id, webhook_id, shard) do update set
        total = webhook_stats.total + excluded.total,
        failed = webhook_stats.failed + excluded.failed,
        attempts = webhook_stats.attempts + 1,
        failed_attempts = webhook_stats.failed_attempts + excluded.failed_attempts,
        last_success_at = greatest(webhook_stats.last_success_at, excluded.last_success_at),
        last_failure_at = greatest(webhook_stats.last_failure_at, excluded.last_failure_at)`;
    return true;
  }

  /** Ends a pending delivery that can no longer be sent (its webhook was deactivated). */
  async abandonDelivery(deliveryId: string, attempt: number, error: string, nowMs: number): Promise<void> {
    await this.db`
      update webhook_deliveries set status = 'failed', error = ${error}, completed_at = ${nowMs}, queued_at = null
      where tenant_id = ${this.tenantId} and id = ${deliveryId} and status = 'pending' and attempt = ${attempt}`;
  }

  /** Marks one attempt as enqueued; an attempt that has moved on since (or was reset) is left alone. */
  async markQueued(deliveryId: string, attempt: number, nowMs: number): Promise<void> {
    await this.db`
      update webhook_deliveries set queued_at = ${nowMs}
      where tenant_id = ${this.tenantId} and id = ${deliveryId} and attempt = ${attempt} and status = 'pending'`;
  }

  private attempts(deliveryId: string): Promise<AttemptRow[]> {
    return this.db<AttemptRow[]>`
      select attempt, status, response_status, response_time_ms, error, started_at, completed_at
      from webhook_delivery_attempts where tenant_id = ${this.tenantId} and delivery_id = ${deliveryId} order by attempt`;
  }

  private deliveryFilter(f: { status?: string | undefined; event?: string | undefined }) {
    const db = this.db;
    return db`${f.status ? db`and status = ${f.status}` : db``} ${f.event ? db`and event = ${f.event}` : db``}`;
  }

  /** Sum of a webhook's counter shards, correlated to the outer `w` (already filtered by tenant). */
  private statsOf() {
    return this.db`
      select coalesce(sum(total), 0)::bigint as total_deliveries, coalesce(sum(failed), 0)::bigint as failed_deliveries,
        coalesce(sum(attempts), 0)::bigint as total_attempts, coalesce(sum(failed_attempts), 0)::bigint as failed_attempts,
        max(last_success_at) as last_success_at, max(last_failure_at) as last_failure_at
      from webhook_stats where tenant_id = w.tenant_id and webhook_id = w.id`;
  }
}
