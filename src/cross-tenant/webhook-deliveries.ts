import type { Db, Sql } from '../sql.js';
import { lockLiveTenants, TOMBSTONE_STATUSES } from '../store/tenants.js';
import type { DeliveryRow, RequestBody, WebhookRow } from '../store/webhooks.js';

/** An undispatched outbox row. */
export interface OutboxEvent { id: number; tenant_id: string; event: string; data: Record<string, unknown>; occurred_at: number; trace_context: string | null }

/** What the fan-out needs of an active webhook, and what an attempt of its new deliveries needs (handed over fresh). */
export type FanOutHook = Pick<WebhookRow, 'tenant_id' | 'id' | 'events' | 'filters' | 'max_retries' | 'url' | 'status' | 'secret_enc' | 'headers' | 'timeout_s' | 'retry_interval_s'>;

/** A delivery the fan-out decided on; it always carries the tenant of its event and webhook. */
export interface NewDelivery { tenant_id: string; id: string; webhook_id: string; outbox_id: number; event: string; max_attempt: number; request_body: RequestBody; trace_context: string | null }

/** A pending attempt, named by tenant and delivery: what one queue job carries. */
export interface Unqueued {
  tenant_id: string; id: string; attempt: number; next_attempt_at: number; trace_context?: string | null;
  /** On a fan-out's claims: the delivery as inserted and its webhook as read in that transaction (no need to load them again). */
  fresh?: { delivery: DeliveryRow; webhook: FanOutHook };
}

/**
 * The background path of webhook delivery, for the outbox relay only: it works across tenants by
 * design (one outbox and one queue per deployment), so it is not a tenant repository and no request
 * handler uses it. Every row it writes is keyed by the tenant of its event; whatever touches one
 * delivery of a known tenant goes through WebhookRepository (src/store/webhooks.ts) instead.
 */
export class CrossTenantDeliveries {
  constructor(private readonly sql: Sql) {}

  /**
   * Fans out up to `batch` undispatched outbox rows in one transaction: `plan` picks the deliveries
   * from the rows and the active webhooks of their tenants, which are inserted (once per webhook and
   * outbox row), and the rows are marked dispatched. Rows locked by another relay are skipped. Events
   * of a tombstoned tenant are marked dispatched with no delivery (its tenants are checked and locked in
   * this transaction, see lockLiveTenants). Returns how many outbox rows were handled.
   *
   * With `claim`, the new deliveries are inserted already taken for the queue by this relay (queued_at
   * = -nowMs: other relays' claimUnqueued skip them) and answered in `claimed`, for the caller to add
   * their jobs at once and then confirmClaim (or releaseClaim if the add failed): an event's delivery
   * goes to the queue without another transaction (issue 35: event-to-receipt latency). A relay that
   * dies before confirming leaves them negative; releaseLostClaims hands them back after a while.
   * `claim.mark` (default -nowMs) is the value stored: a relay handing the deliveries to its own
   * consumer stores minus the end of their lease instead (src/webhooks/handoff.ts).
   */
  fanOut(batch: number, nowMs: number, plan: (events: OutboxEvent[], hooks: FanOutHook[]) => NewDelivery[], claim?: { claimed: Unqueued[]; mark?: number }): Promise<number> {
    return this.sql.begin(async (tx) => {
      const events = await tx<OutboxEvent[]>`
        select id, tenant_id, event, data, occurred_at, trace_context from event_outbox
        where dispatched_at is null order by id limit ${batch} for update skip locked`;
      if (!events.length) return 0;
      // Statements issued together go down the connection together (pipelined) and run in order, so the
      // tenants are locked before the webhooks are read, at one round trip for both (issue 35: a pass
      // sits between an event's commit and its delivery).
      const tenantIds = [...new Set(events.map((e) => e.tenant_id))];
      const [live, active] = await Promise.all([
        lockLiveTenants(tx, tenantIds),
        tx<FanOutHook[]>`select tenant_id, id, events, filters, max_retries, url, status, secret_enc, headers, timeout_s, retry_interval_s
          from webhooks where tenant_id = any(${tenantIds}::text[]) and status = 'active'`,
      ]);
      const hooks = active.filter((h) => live.has(h.tenant_id));
      const rows = plan(events, hooks).map((d) => ({ ...d, status: 'pending', attempt: 1, triggered_at: nowMs, next_attempt_at: nowMs, queued_at: claim ? claim.mark ?? -nowMs : null }));
      const writes: Array<Promise<unknown>> = [];
      for (let i = 0; i < rows.length; i += 1000) {
        writes.push(tx<Array<{ tenant_id: string; id: string }>>`insert into webhook_deliveries ${tx(rows.slice(i, i + 1000) as never, 'tenant_id', 'id', 'webhook_id', 'outbox_id', 'event', 'status', 'attempt', 'max_attempt', 'request_body', 'triggered_at', 'next_attempt_at', 'trace_context', 'queued_at')}
          on conflict (tenant_id, webhook_id, outbox_id) do nothing returning tenant_id, id`.then((made) => {
          if (!claim) return;
          const byKey = new Map(rows.map((r) => [`${r.tenant_id}\0${r.id}`, r]));
          const hookOf = new Map(hooks.map((h) => [`${h.tenant_id}\0${h.id}`, h]));
          for (const m of made) {
            const r = byKey.get(`${m.tenant_id}\0${m.id}`)!;
            const delivery: DeliveryRow = {
              ...r, status: 'pending', response_status: null, response_time_ms: null, error: null, completed_at: null,
            };
            claim.claimed.push({ tenant_id: r.tenant_id, id: r.id, attempt: 1, next_attempt_at: nowMs, trace_context: r.trace_context, fresh: { delivery, webhook: hookOf.get(`${r.tenant_id}\0${r.webhook_id}`)! } });
          }
        }));
      }
      // Same lock order in every relay (sorted keys), so two relays never deadlock on webhook rows.
      const triggered = new Map(rows.map((r) => [`${r.tenant_id}\0${r.webhook_id}`, r]));
      for (const [, r] of [...triggered.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
        writes.push(tx`update webhooks set last_triggered_at = greatest(coalesce(last_triggered_at, 0), ${nowMs})
          where tenant_id = ${r.tenant_id} and id = ${r.webhook_id}`);
      }
      writes.push(tx`update event_outbox set dispatched_at = ${nowMs} where id = any(${events.map((e) => String(e.id))}::text[]::bigint[])`);
      await Promise.all(writes);
      return events.length;
    }) as Promise<number>;
  }

  /**
   * Pending attempts not (known to be) in the queue, none of a tombstoned tenant, up to `limit` and
   * soonest due first: each is handed to `add` and then marked queued, in one transaction that holds
   * them FOR UPDATE SKIP LOCKED. So two relays never take the same attempt (a batch job of one relay
   * never shares a delivery with another's), and a relay that dies before the commit leaves them
   * unqueued: they are taken again (the add repeated, see OutboxRelay). The rows being locked, nothing
   * can delete or move them on between the add and the mark. Answers what was taken.
   */
  claimUnqueued(limit: number, add: (items: Unqueued[]) => Promise<void>): Promise<Unqueued[]> {
    return this.sql.begin(async (tx) => {
      // Ties broken by key: a relay repeating its add after a crash makes the same batches (the same job ids).
      const items = await tx<Unqueued[]>`
        select d.tenant_id, d.id, d.attempt, d.next_attempt_at, d.trace_context from webhook_deliveries d
        where d.status = 'pending' and d.queued_at is null
          and not exists (select 1 from tenants t where t.id = d.tenant_id and t.status = any(${TOMBSTONE_STATUSES as string[]}::text[]))
        order by d.next_attempt_at, d.tenant_id, d.id limit ${limit} for update of d skip locked`;
      if (!items.length) return items;
      await add(items);
      await tx`update webhook_deliveries d set queued_at = ${Date.now()}
        from unnest(${items.map((i) => i.tenant_id)}::text[], ${items.map((i) => i.id)}::text[]) as u(tenant_id, id)
        where d.tenant_id = u.tenant_id and d.id = u.id`;
      return items;
    }) as Promise<Unqueued[]>;
  }

  /**
   * The claimed deliveries' jobs are in the queue: marks them queued (unless they moved on meanwhile).
   * Rows locked right now are skipped: the worker is recording them (which clears queued_at), and
   * waiting for them in another order than its record's would deadlock with it.
   */
  async confirmClaim(items: Unqueued[], nowMs: number, claimedAt: number): Promise<Unqueued[]> {
    if (!items.length) return [];
    // Answers the items whose delivery no longer exists (its tenant purged between the fan-out and the add).
    const gone = await this.sql<Array<{ n: string }>>`
      with u as (select * from unnest(${items.map((i) => i.tenant_id)}::text[], ${items.map((i) => i.id)}::text[]) with ordinality as u(tenant_id, id, n)),
      m as (update webhook_deliveries d set queued_at = ${nowMs}
        where (d.tenant_id, d.id) in (
          select c.tenant_id, c.id from webhook_deliveries c join u on c.tenant_id = u.tenant_id and c.id = u.id
          where c.queued_at = ${-claimedAt} for update of c skip locked)
        returning 1)
      select u.n::text as n from u where not exists (select 1 from webhook_deliveries d where d.tenant_id = u.tenant_id and d.id = u.id)`;
    return gone.map((g) => items[Number(g.n) - 1]!);
  }

  /** Adding the claimed deliveries' jobs failed: they are unqueued again, for claimUnqueued. */
  async releaseClaim(items: Unqueued[], claimedAt: number): Promise<void> {
    if (!items.length) return;
    await this.sql`update webhook_deliveries d set queued_at = null
      from unnest(${items.map((i) => i.tenant_id)}::text[], ${items.map((i) => i.id)}::text[]) as u(tenant_id, id)
      where d.tenant_id = u.tenant_id and d.id = u.id and d.queued_at = ${-claimedAt}`;
  }

  /**
   * Deliveries held by this process's consumer (src/webhooks/handoff.ts) under the claim `mark`
   * each: their leases are moved to `newMark`. Answers the keys ("tenant\0id") of those renewed; one
   * whose claim changed meanwhile (recorded, or released) is left alone.
   */
  async renewHeld(items: Array<{ tenant_id: string; id: string; mark: number }>, newMark: number): Promise<Set<string>> {
    if (!items.length) return new Set();
    const rows = await this.sql<Array<{ tenant_id: string; id: string }>>`update webhook_deliveries d set queued_at = ${newMark}
      from unnest(${items.map((i) => i.tenant_id)}::text[], ${items.map((i) => i.id)}::text[], ${items.map((i) => String(i.mark))}::text[]::bigint[]) as u(tenant_id, id, mark)
      where d.tenant_id = u.tenant_id and d.id = u.id and d.queued_at = u.mark returning d.tenant_id, d.id`;
    return new Set(rows.map((r) => `${r.tenant_id}\0${r.id}`));
  }

  /** Held deliveries given back unsent (the process is closing): unqueued again, for claimUnqueued, if still under `mark`. */
  async releaseHeld(items: Array<{ tenant_id: string; id: string; mark: number }>): Promise<void> {
    if (!items.length) return;
    await this.sql`update webhook_deliveries d set queued_at = null
      from unnest(${items.map((i) => i.tenant_id)}::text[], ${items.map((i) => i.id)}::text[], ${items.map((i) => String(i.mark))}::text[]::bigint[]) as u(tenant_id, id, mark)
      where d.tenant_id = u.tenant_id and d.id = u.id and d.queued_at = u.mark`;
  }

  /**
   * Claims taken in a fan-out and never confirmed (the relay died) before `beforeMs`, and leases of
   * held deliveries that ended before `beforeMs` (their process died): unqueued again.
   */
  async releaseLostClaims(beforeMs: number): Promise<number> {
    const r = await this.sql`update webhook_deliveries set queued_at = null where status = 'pending' and queued_at < 0 and queued_at > ${-beforeMs}`;
    return r.count;
  }

  /**
   * After the queue's Redis lost its data: every pending delivery must be enqueued again, except those
   * a consumer holds under a lease still running (queued_at < -nowMs: they never were in the queue).
   */
  async resetQueued(nowMs: number): Promise<number> {
    const r = await this.sql`update webhook_deliveries set queued_at = null where status = 'pending' and queued_at is not null and queued_at >= ${-nowMs}`;
    return r.count;
  }

  /**
   * Pending attempts due before `beforeMs` and marked queued: candidates for a per-job existence check
   * (claims, negative, have no job yet: releaseLostClaims looks after them).
   */
  overdue(beforeMs: number, limit: number): Promise<Unqueued[]> {
    return this.sql<Unqueued[]>`
      select tenant_id, id, attempt, next_attempt_at from webhook_deliveries
      where status = 'pending' and queued_at > 0 and next_attempt_at < ${beforeMs} order by next_attempt_at limit ${limit}`;
  }
}

/**
 * Whether the outbox table can be read at all (the webhook-sender plugin's health check): one row of
 * any tenant, read only to prove the table answers.
 */
export async function outboxReadable(sql: Db): Promise<void> {
  await sql`select 1 from event_outbox limit 1`;
}

/**
 * The outbox's backlog for metrics: rows not yet fanned out and when the oldest occurred (ms), over
 * every tenant (the partial index event_outbox_undispatched holds exactly these rows).
 */
export async function outboxBacklog(sql: Db): Promise<{ pending: number; oldestAt: number | null }> {
  const [r] = await sql<Array<{ pending: number; oldest: number | null }>>`
    select count(*)::int as pending, min(occurred_at) as oldest from event_outbox where dispatched_at is null`;
  return { pending: r?.pending ?? 0, oldestAt: r?.oldest ?? null };
}
