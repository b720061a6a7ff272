import { randomBytes } from 'node:crypto';
import type { Sql, TxSql } from '../store/sql.js';
import { filtersMatch } from './filters.js';
import { newDeliveryId, type RequestBody } from './message.js';
import { openSecret, sealSecret, secretAad } from './secret-box.js';

/**
 * Storage of webhooks, deliveries and the outbox fan-out. Every query names the tenant; handlers never
 * build SQL. The relay functions at the bottom work across tenants by design (one outbox per
 * deployment), yet each row they write carries and is keyed by the tenant of its event.
 */

type Db = Sql | TxSql;

export interface WebhookRow {
  tenant_id: string; id: string; name: string; description: string | null; url: string; events: string[];
  status: 'active' | 'inactive'; secret_enc: Buffer; headers: Record<string, string>; timeout_s: number;
  max_retries: number; retry_interval_s: number; filters: Record<string, Record<string, unknown>>;
  total_deliveries: number; failed_deliveries: number; last_triggered_at: number | null; last_success_at: number | null;
  last_failure_at: number | null; created_at: number; updated_at: number;
}

export interface DeliveryRow {
  tenant_id: string; id: string; webhook_id: string; outbox_id: number | null; event: string;
  status: 'pending' | 'success' | 'failed'; attempt: number; max_attempt: number; response_status: number | null;
  response_time_ms: number | null; error: string | null; request_body: RequestBody; triggered_at: number;
  completed_at: number | null; next_attempt_at: number; queued_at: number | null;
}

export interface AttemptRow {
  attempt: number; status: 'success' | 'failed'; response_status: number | null; response_time_ms: number;
  error: string | null; started_at: number; completed_at: number;
}

export interface WebhookInput {
  name: string; description?: string | undefined; url: string; events: string[]; secret: string;
  headers?: Record<string, string> | undefined; timeout?: number | undefined;
  retry_policy?: { max_retries?: number | undefined; retry_interval?: number | undefined } | undefined;
  filters?: Record<string, Record<string, unknown>> | undefined;
}

export type WebhookPatch = Partial<Omit<WebhookInput, 'secret'>> & { secret?: string | undefined; status?: 'active' | 'inactive' | undefined };

export const DEFAULT_MAX_RETRIES = 5;
export const DEFAULT_RETRY_INTERVAL_S = 30;
export const DEFAULT_TIMEOUT_S = 30;

export function newWebhookId(): string {
  return `wh_${randomBytes(12).toString('base64url')}`;
}

/** Opaque keyset cursor over (time desc, id desc). */
export function encodeCursor(time: number | bigint, id: string): string {
  return Buffer.from(JSON.stringify([Number(time), id])).toString('base64url');
}
export function decodeCursor(cursor: string | undefined): [number, string] | undefined {
  if (!cursor) return undefined;
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === 'string') return [v[0] as number, v[1]];
  } catch { /* fall through */ }
  return undefined;
}

export async function insertWebhook(db: Db, tenantId: string, id: string, input: WebhookInput, kek: Buffer, nowMs: number): Promise<WebhookRow> {
  const [row] = await db<WebhookRow[]>`
    insert into webhooks (tenant_id, id, name, description, url, events, status, secret_enc, headers, timeout_s,
      max_retries, retry_interval_s, filters, created_at, updated_at)
    values (${tenantId}, ${id}, ${input.name}, ${input.description ?? null}, ${input.url}, ${input.events}, 'active',
      ${sealSecret(kek, secretAad(tenantId, id), input.secret)}, ${db.json(input.headers ?? {})},
      ${input.timeout ?? DEFAULT_TIMEOUT_S}, ${input.retry_policy?.max_retries ?? DEFAULT_MAX_RETRIES},
      ${input.retry_policy?.retry_interval ?? DEFAULT_RETRY_INTERVAL_S}, ${db.json((input.filters ?? {}) as never)}, ${nowMs}, ${nowMs})
    returning *`;
  return { ...row!, total_deliveries: 0, failed_deliveries: 0, last_success_at: null, last_failure_at: null };
}

export async function getWebhook(db: Db, tenantId: string, id: string): Promise<WebhookRow | undefined> {
  const [row] = await db<WebhookRow[]>`
    select w.*, s.* from webhooks w, lateral (${statsOf(db)}) s where w.tenant_id = ${tenantId} and w.id = ${id}`;
  return row;
}

export async function listWebhooks(db: Db, tenantId: string, q: { limit: number; cursor?: [number, string] | undefined; status?: string | undefined }): Promise<{ rows: WebhookRow[]; total: number; next: string | null }> {
  const status = q.status ?? null;
  const [c0, c1] = q.cursor ?? [null, null];
  const rows = await db<WebhookRow[]>`
    select w.*, s.* from webhooks w, lateral (${statsOf(db)}) s
    where w.tenant_id = ${tenantId}
      and (${status}::text is null or w.status = ${status})
      and (${c0}::bigint is null or (w.created_at, w.id) < (${c0}::bigint, ${c1}::text))
    order by w.created_at desc, w.id desc
    limit ${q.limit + 1}`;
  const [{ total }] = await db<{ total: number }[]>`
    select count(*)::int as total from webhooks where tenant_id = ${tenantId} and (${status}::text is null or status = ${status})` as unknown as [{ total: number }];
  const more = rows.length > q.limit;
  if (more) rows.pop();
  const last = rows[rows.length - 1];
  return { rows, total, next: more && last ? encodeCursor(last.created_at, last.id) : null };
}

export async function updateWebhook(db: Db, tenantId: string, id: string, p: WebhookPatch, kek: Buffer, nowMs: number): Promise<WebhookRow | undefined> {
  const cur = await db<WebhookRow[]>`select * from webhooks where tenant_id = ${tenantId} and id = ${id} for update`;
  // (Counters live in webhook_stats; this row lock does not block deliveries.)
  const w = cur[0];
  if (!w) return undefined;
  const [row] = await db<WebhookRow[]>`
    update webhooks set
      name = ${p.name ?? w.name},
      description = ${p.description !== undefined ? p.description : w.description},
      url = ${p.url ?? w.url},
      events = ${p.events ?? w.events},
      status = ${p.status ?? w.status},
      secret_enc = ${p.secret !== undefined ? sealSecret(kek, secretAad(tenantId, id), p.secret) : w.secret_enc},
      headers = ${db.json(p.headers ?? w.headers)},
      timeout_s = ${p.timeout ?? w.timeout_s},
      max_retries = ${p.retry_policy?.max_retries ?? w.max_retries},
      retry_interval_s = ${p.retry_policy?.retry_interval ?? w.retry_interval_s},
      filters = ${db.json((p.filters ?? w.filters) as never)},
      updated_at = ${nowMs}
    where tenant_id = ${tenantId} and id = ${id}
    returning id`;
  return row ? getWebhook(db, tenantId, id) : undefined;
}

export async function deleteWebhook(db: Db, tenantId: string, id: string): Promise<boolean> {
  const rows = await db`delete from webhooks where tenant_id = ${tenantId} and id = ${id} returning id`;
  return rows.length > 0;
}

/** Sum of a webhook's counter shards (correlated to the outer `w`). */
function statsOf(db: Db) {
  return db`
    select coalesce(sum(total), 0)::bigint as total_deliveries, coalesce(sum(failed), 0)::bigint as failed_deliveries,
      max(last_success_at) as last_success_at, max(last_failure_at) as last_failure_at
    from webhook_stats where tenant_id = w.tenant_id and webhook_id = w.id`;
}

export const STATS_SHARDS = 16;

export function webhookSecret(w: WebhookRow, kek: Buffer): string {
  return openSecret(kek, secretAad(w.tenant_id, w.id), w.secret_enc);
}

export async function listDeliveries(db: Db, tenantId: string, webhookId: string, q: { limit: number; cursor?: [number, string] | undefined; status?: string | undefined; event?: string | undefined }): Promise<{ rows: DeliveryRow[]; total: number; next: string | null }> {
  const status = q.status ?? null;
  const event = q.event ?? null;
  const [c0, c1] = q.cursor ?? [null, null];
  const rows = await db<DeliveryRow[]>`
    select * from webhook_deliveries
    where tenant_id = ${tenantId} and webhook_id = ${webhookId}
      and (${status}::text is null or status = ${status})
      and (${event}::text is null or event = ${event})
      and (${c0}::bigint is null or (triggered_at, id) < (${c0}::bigint, ${c1}::text))
    order by triggered_at desc, id desc
    limit ${q.limit + 1}`;
  const [count] = await db<{ total: number }[]>`
    select count(*)::int as total from webhook_deliveries
    where tenant_id = ${tenantId} and webhook_id = ${webhookId}
      and (${status}::text is null or status = ${status}) and (${event}::text is null or event = ${event})`;
  const more = rows.length > q.limit;
  if (more) rows.pop();
  const last = rows[rows.length - 1];
  return { rows, total: count!.total, next: more && last ? encodeCursor(last.triggered_at, last.id) : null };
}

export async function getDelivery(db: Db, tenantId: string, webhookId: string, deliveryId: string): Promise<{ delivery: DeliveryRow; attempts: AttemptRow[] } | undefined> {
  const [delivery] = await db<DeliveryRow[]>`
    select * from webhook_deliveries where tenant_id = ${tenantId} and webhook_id = ${webhookId} and id = ${deliveryId}`;
  if (!delivery) return undefined;
  const attempts = await db<AttemptRow[]>`
    select attempt, status, response_status, response_time_ms, error, started_at, completed_at
    from webhook_delivery_attempts where tenant_id = ${tenantId} and delivery_id = ${deliveryId} order by attempt`;
  return { delivery, attempts };
}

/**
 * Manual retry: a failed delivery becomes pending for one more attempt (no further automatic retries),
 * due now. The relay enqueues it (queued_at null) within moments. Returns 'not_failed' when it is not failed.
 */
export async function retryDelivery(db: Db, tenantId: string, webhookId: string, deliveryId: string, nowMs: number): Promise<DeliveryRow | 'not_found' | 'not_failed'> {
  const [row] = await db<DeliveryRow[]>`
    update webhook_deliveries set status = 'pending', attempt = attempt + 1, max_attempt = attempt + 1,
      next_attempt_at = ${nowMs}, queued_at = null, completed_at = null
    where tenant_id = ${tenantId} and webhook_id = ${webhookId} and id = ${deliveryId} and status = 'failed'
    returning *`;
  if (row) return row;
  const [exists] = await db`select 1 from webhook_deliveries where tenant_id = ${tenantId} and webhook_id = ${webhookId} and id = ${deliveryId}`;
  return exists ? 'not_failed' : 'not_found';
}

/** Claims an Idempotency-Key for the test operation; returns the stored result when the key was used in the last 24 h. */
export async function claimTestKey(db: Db, tenantId: string, webhookId: string, key: string, nowMs: number): Promise<{ claimed: true } | { claimed: false; result: unknown }> {
  await db`delete from webhook_test_idempotency where tenant_id = ${tenantId} and webhook_id = ${webhookId} and key = ${key} and created_at < ${nowMs - 24 * 3600 * 1000}`;
  const ins = await db`
    insert into webhook_test_idempotency (tenant_id, webhook_id, key, created_at) values (${tenantId}, ${webhookId}, ${key}, ${nowMs})
    on conflict do nothing returning 1`;
  if (ins.length) return { claimed: true };
  const [prev] = await db<{ result: unknown }[]>`select result from webhook_test_idempotency where tenant_id = ${tenantId} and webhook_id = ${webhookId} and key = ${key}`;
  return { claimed: false, result: prev?.result ?? null };
}

export async function storeTestResult(db: Db, tenantId: string, webhookId: string, key: string, result: unknown): Promise<void> {
  await db`update webhook_test_idempotency set result = ${db.json(result as never)} where tenant_id = ${tenantId} and webhook_id = ${webhookId} and key = ${key}`;
}

export async function releaseTestKey(db: Db, tenantId: string, webhookId: string, key: string): Promise<void> {
  await db`delete from webhook_test_idempotency where tenant_id = ${tenantId} and webhook_id = ${webhookId} and key = ${key} and result is null`;
}

// ---- relay and worker side ----

interface OutboxRow { id: number; tenant_id: string; event: string; data: Record<string, unknown>; occurred_at: number }

/**
 * Fans out up to `batch` undispatched outbox rows in one transaction: one pending delivery per matching
 * active webhook, then marks the rows dispatched. Rows locked by another relay are skipped.
 * Returns how many outbox rows were handled.
 */
export async function fanOut(sql: Sql, batch: number, nowMs: number): Promise<number> {
  return sql.begin(async (tx) => {
    const events = await tx<OutboxRow[]>`
      select id, tenant_id, event, data, occurred_at from event_outbox
      where dispatched_at is null order by id limit ${batch} for update skip locked`;
    if (!events.length) return 0;
    const tenants = [...new Set(events.map((e) => e.tenant_id))];
    const hooks = await tx<Pick<WebhookRow, 'tenant_id' | 'id' | 'events' | 'filters' | 'max_retries'>[]>`
      select tenant_id, id, events, filters, max_retries from webhooks
      where tenant_id = any(${tenants}::text[]) and status = 'active'`;
    const rows: Record<string, unknown>[] = [];
    const triggered = new Map<string, { tenant_id: string; id: string }>();
    for (const e of events) {
      for (const h of hooks) {
        if (h.tenant_id !== e.tenant_id || !h.events.includes(e.event) || !filtersMatch(h.filters, e.event, e.data)) continue;
        const body: RequestBody = { event: e.event, timestamp: new Date(Number(e.occurred_at)).toISOString(), data: e.data };
        rows.push({
          tenant_id: e.tenant_id, id: newDeliveryId(), webhook_id: h.id, outbox_id: e.id, event: e.event, status: 'pending',
          attempt: 1, max_attempt: 1 + h.max_retries, request_body: body, triggered_at: nowMs, next_attempt_at: nowMs,
        });
        triggered.set(`${h.tenant_id}\0${h.id}`, h);
      }
    }
    for (let i = 0; i < rows.length; i += 1000) {
      await tx`insert into webhook_deliveries ${tx(rows.slice(i, i + 1000) as never, 'tenant_id', 'id', 'webhook_id', 'outbox_id', 'event', 'status', 'attempt', 'max_attempt', 'request_body', 'triggered_at', 'next_attempt_at')}
        on conflict (tenant_id, webhook_id, outbox_id) do nothing`;
    }
    // Same lock order in every relay (sorted keys), so two relays never deadlock on webhook rows.
    for (const h of [...triggered.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, v]) => v)) {
      await tx`update webhooks set last_triggered_at = greatest(coalesce(last_triggered_at, 0), ${nowMs}) where tenant_id = ${h.tenant_id} and id = ${h.id}`;
    }
    await tx`update event_outbox set dispatched_at = ${nowMs} where id = any(${events.map((e) => String(e.id))}::text[]::bigint[])`;
    return events.length;
  }) as Promise<number>;
}

export interface Unqueued { tenant_id: string; id: string; attempt: number; next_attempt_at: number }

/** Pending deliveries whose current attempt is not (known to be) in the queue. */
export async function unqueuedDeliveries(sql: Sql, limit: number): Promise<Unqueued[]> {
  return sql<Unqueued[]>`
    select tenant_id, id, attempt, next_attempt_at from webhook_deliveries
    where status = 'pending' and queued_at is null order by next_attempt_at limit ${limit}`;
}

/** Marks attempts as enqueued; an attempt that has moved on since (or was reset) is left alone. */
export async function markQueued(sql: Sql, items: Unqueued[], nowMs: number): Promise<void> {
  if (!items.length) return;
  await sql`
    update webhook_deliveries d set queued_at = ${nowMs}
    from unnest(${items.map((i) => i.tenant_id)}::text[], ${items.map((i) => i.id)}::text[], ${items.map((i) => String(i.attempt))}::text[]::int[]) as u(tenant_id, id, attempt)
    where d.tenant_id = u.tenant_id and d.id = u.id and d.attempt = u.attempt and d.status = 'pending'`;
}

/** After the queue's Redis lost its data: every pending delivery must be enqueued again. */
export async function resetQueued(sql: Sql): Promise<number> {
  const r = await sql`update webhook_deliveries set queued_at = null where status = 'pending' and queued_at is not null`;
  return r.count;
}

/** Pending attempts overdue by more than graceMs: candidates for a per-job existence check. */
export async function overdueDeliveries(sql: Sql, beforeMs: number, limit: number): Promise<Unqueued[]> {
  return sql<Unqueued[]>`
    select tenant_id, id, attempt, next_attempt_at from webhook_deliveries
    where status = 'pending' and queued_at is not null and next_attempt_at < ${beforeMs} order by next_attempt_at limit ${limit}`;
}

export async function loadDelivery(sql: Sql, tenantId: string, deliveryId: string): Promise<{ delivery: DeliveryRow; webhook: WebhookRow } | undefined> {
  const [delivery] = await sql<DeliveryRow[]>`select * from webhook_deliveries where tenant_id = ${tenantId} and id = ${deliveryId}`;
  if (!delivery) return undefined;
  const webhook = await getWebhook(sql, tenantId, delivery.webhook_id);
  return webhook ? { delivery, webhook } : undefined;
}

export interface AttemptOutcome {
  ok: boolean; responseStatus: number | null; responseTimeMs: number; error: string | null; startedAt: number; completedAt: number;
  /** When the attempt failed and another is allowed: when it is due. */
  nextAttemptAt: number | null;
}

/**
 * Records one attempt atomically: the attempt row, the delivery's new state and the webhook's counters
 * (incremented in SQL, so concurrent workers never lose an update). Returns false when the attempt was
 * already recorded (a duplicate job), in which case nothing changes.
 */
export async function recordAttempt(sql: Sql, tenantId: string, deliveryId: string, attempt: number, o: AttemptOutcome): Promise<boolean> {
  return sql.begin(async (tx) => {
    const retry = !o.ok && o.nextAttemptAt !== null;
    const [d] = await tx<{ webhook_id: string }[]>`
      update webhook_deliveries set
        status = ${o.ok ? 'success' : retry ? 'pending' : 'failed'},
        attempt = ${retry ? attempt + 1 : attempt},
        response_status = ${o.responseStatus}, response_time_ms = ${o.responseTimeMs}, error = ${o.error},
        completed_at = ${retry ? null : o.completedAt},
        next_attempt_at = ${retry ? o.nextAttemptAt! : o.completedAt},
        queued_at = null
      where tenant_id = ${tenantId} and id = ${deliveryId} and status = 'pending' and attempt = ${attempt}
      returning webhook_id`;
    if (!d) return false;
    await tx`
      insert into webhook_delivery_attempts (tenant_id, delivery_id, attempt, status, response_status, response_time_ms, error, started_at, completed_at)
      values (${tenantId}, ${deliveryId}, ${attempt}, ${o.ok ? 'success' : 'failed'}, ${o.responseStatus}, ${o.responseTimeMs}, ${o.error}, ${o.startedAt}, ${o.completedAt})`;
    const shard = Math.floor(Math.random() * STATS_SHARDS);
    const success = o.ok ? o.completedAt : null;
    const failure = o.ok ? null : o.completedAt;
    await tx`
      insert into webhook_stats (tenant_id, webhook_id, shard, total, failed, last_success_at, last_failure_at)
      values (${tenantId}, ${d.webhook_id}, ${shard}, 1, ${o.ok ? 0 : 1}, ${success}, ${failure})
      on conflict (tenant_id, webhook_id, shard) do update set
        total = webhook_stats.total + 1,
        failed = webhook_stats.failed + excluded.failed,
        last_success_at = greatest(webhook_stats.last_success_at, excluded.last_success_at),
        last_failure_at = greatest(webhook_stats.last_failure_at, excluded.last_failure_at)`;
    return true;
  }) as Promise<boolean>;
}

/** Ends a pending delivery that can no longer be sent (its webhook was deactivated). */
export async function abandonDelivery(sql: Sql, tenantId: string, deliveryId: string, attempt: number, error: string, nowMs: number): Promise<void> {
  await sql`
    update webhook_deliveries set status = 'failed', error = ${error}, completed_at = ${nowMs}, queued_at = null
    where tenant_id = ${tenantId} and id = ${deliveryId} and status = 'pending' and attempt = ${attempt}`;
}
