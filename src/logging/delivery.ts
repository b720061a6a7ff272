import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/index.js';
import { type DeliveryRow, type DestinationRow } from '../store/log-archive.js';
import { archiveQueries } from '../cross-tenant/log-archive.js';
import type { Sql } from '../sql.js';
import { chunkDir } from './archive.js';
import { postToSink, readObject } from './destinations.js';

/** Deliveries one pass sends to one sink at most (the rest wait for the next pass). */
const PER_PASS = 200;

/** The wait after the n-th consecutive failed attempt: `base` doubled per failure, at most `max`, with up to 20% less at random (sinks recovering are not hit by every worker at once). */
export function retryDelay(attempts: number, base: number, max: number, random: () => number = Math.random): number {
  const full = Math.min(max, base * 2 ** Math.min(30, Math.max(0, attempts - 1)));
  return Math.max(1, Math.round(full * (1 - 0.2 * random())));
}

export interface DeliveryCtx { sql: Sql; store: Store; config: Config; log: Logger }

/**
 * One delivery pass: every enabled http_sink with deliveries due is sent them, oldest first, each sink
 * on its own (a slow or failing one holds back no other). The first failure of a sink ends its pass
 * and backs off all of its pending deliveries: it is the sink that is down, not one object. State is in
 * Postgres only (log_deliveries), so a worker killed mid-pass loses nothing: a claimed delivery is due
 * again when its lease lapses. At least once: a sink may receive an object twice (a kill between its
 * answer and the record of it), and must treat the object key as idempotent.
 */
export async function deliverDue(ctx: DeliveryCtx, now: () => number = Date.now): Promise<{ delivered: number; failed: number }> {
  const sinks = await archiveQueries.dueSinks(ctx.sql, now());
  const results = await Promise.all(sinks.map((d) => drain(ctx, d, now)));
  return results.reduce((a, r) => ({ delivered: a.delivered + r.delivered, failed: a.failed + r.failed }), { delivered: 0, failed: 0 });
}

async function drain(ctx: DeliveryCtx, d: DestinationRow, now: () => number): Promise<{ delivered: number; failed: number }> {
  const lease = (d.config.timeout_ms ?? 10_000) + 5_000;
  let delivered = 0;
  for (let i = 0; i < PER_PASS; i++) {
    const row = await archiveQueries.claimDelivery(ctx.sql, d, now(), lease);
    if (!row) break;
    const r = await attempt(ctx, d, row);
    if (r === 'superseded') { await archiveQueries.deliveryOutcome(ctx.sql, row, d, { superseded: true }); continue; }
    if (r.ok) { await archiveQueries.deliveryOutcome(ctx.sql, row, d, { ok: true, status: r.status }); delivered++; continue; }
    const retryAt = now() + retryDelay(row.attempts, ctx.config.logDeliveryRetryMs, ctx.config.logDeliveryRetryMaxMs);
    await archiveQueries.deliveryOutcome(ctx.sql, row, d, { ok: false, status: r.status, error: r.error, retryAt });
    ctx.log.warn({ destination: d.id, chunk: row.chunk_id, attempts: row.attempts, status: r.status, err: r.error }, 'log chunk not delivered to http_sink; retried with backoff');
    return { delivered, failed: 1 };
  }
  return { delivered, failed: 0 };
}

/** Sends one delivery's object, read from the chunk's catalog location; `superseded` when the chunk no longer has that object. */
async function attempt(ctx: DeliveryCtx, d: DestinationRow, row: DeliveryRow): Promise<'superseded' | { ok: boolean; status: number | null; error: string }> {
  const chunk = await ctx.store.forTenant(row.tenant_id).logArchive.chunk(row.chunk_id);
  if (!chunk || chunk.status !== 'committed' || chunk.object_key !== row.object_key) return 'superseded';
  let obj: Buffer;
  try {
    obj = await readObject(chunkDir(ctx.config, chunk), chunk.object_key);
  } catch (err) {
    return { ok: false, status: null, error: `object not readable: ${(err as NodeJS.ErrnoException).code ?? 'read failed'}` };
  }
  const headers: Record<string, string> = { 'X-Svc-Key-Version': String(row.key_version), 'X-Svc-Delivery-Attempt': String(row.attempts) };
  if (row.supersedes_object_key !== null) {
    headers['X-Svc-Supersedes-Object-Key'] = row.supersedes_object_key;
    headers['X-Svc-Supersedes-Key-Version'] = String(row.supersedes_key_version);
  }
  try {
    const r = await postToSink(ctx.config, ctx.store.forTenant(d.tenant_id).logArchive, d, chunk.object_key, obj, chunk.id, headers);
    return { ok: r.ok, status: r.status, error: r.error ?? (r.ok ? '' : `status ${r.status}`) };
  } catch (err) {
    return { ok: false, status: null, error: (err as Error).message };
  }
}
