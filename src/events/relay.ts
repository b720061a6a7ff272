import type { Logger } from '../log.js';
import { queueKeys } from '../store/redis-keys.js';
import type { Sql } from '../sql.js';
import { CrossTenantDeliveries, type Unqueued } from '../cross-tenant/webhook-deliveries.js';
import { planDeliveries } from '../webhooks/fan-out.js';
import type { JobQueues } from '../jobs/queues.js';
import { deliveryJobId } from '../webhooks/queue.js';
import { endWithError, spanUnder, tracingOn } from '../tracing/tracer.js';
import { OUTBOX_CHANNEL } from './outbox.js';

export interface RelayOptions {
  /** Fallback poll when no NOTIFY arrives (e.g. the LISTEN connection is re-established). */
  pollMs?: number;
  batch?: number;
  /** How often to check that the queue's Redis still holds our data. */
  sentinelEveryMs?: number;
  /** How often, and after how long overdue, pending attempts are checked one by one against the queue. */
  overdueEveryMs?: number;
  overdueGraceMs?: number;
}

/**
 * Moves events from the Postgres outbox into BullMQ, in two crash-safe steps:
 * 1. fan-out: in one transaction, each undispatched outbox row becomes one pending delivery per matching
 *    webhook and is marked dispatched (all or nothing, so never lost and never fanned out twice);
 * 2. enqueue: each pending delivery whose current attempt is not marked queued is added to BullMQ with
 *    jobId = "<delivery>.<attempt>" and then marked. Dying between add and mark only repeats the add,
 *    which BullMQ ignores for an existing id (and the consumer ignores for a finished attempt).
 * If the queue's Redis loses its data (sentinel key gone), every pending delivery is enqueued again.
 */
export class OutboxRelay {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private unlisten: (() => Promise<void>) | undefined;
  /** Set once the queue connection is first up: until then a pass could only fail (it refuses commands while connecting). */
  private queueUp = false;
  private lastSentinel = 0;
  private lastOverdue = 0;
  private readonly opts: Required<RelayOptions>;
  private readonly sentinelKey: string;
  /** The relay serves every tenant of its database: it reads and writes through the cross-tenant path only. */
  private readonly deliveries: CrossTenantDeliveries;
  /** Where queued_at is marked: a pool with synchronous_commit off when given (a lost mark only repeats an add BullMQ ignores). */
  private readonly marks: CrossTenantDeliveries;

  constructor(private readonly sql: Sql, private readonly jobs: JobQueues, redisPrefix: string, private readonly log: Logger, opts: RelayOptions = {}, markSql: Sql = sql) {
    this.deliveries = new CrossTenantDeliveries(sql);
    this.marks = new CrossTenantDeliveries(markSql);
    this.opts = { pollMs: 1000, batch: 500, sentinelEveryMs: 5000, overdueEveryMs: 30_000, overdueGraceMs: 120_000, ...opts };
    this.sentinelKey = queueKeys.relaySentinel({ redisPrefix });
  }

  async start(): Promise<void> {
    const l = await this.sql.listen(OUTBOX_CHANNEL, () => this.kick());
    this.unlisten = () => l.unlisten();
    this.timer = setInterval(() => this.kick(), this.opts.pollMs);
    // The queue connection fails fast (no offline queue), so a pass before it is up fails and warns on
    // every start. Passes wait for its first 'ready'; a later outage still fails passes, and is logged.
    const conn = this.jobs.connection;
    if (conn.status === 'ready') this.queueUp = true;
    else conn.once('ready', () => { this.queueUp = true; this.kick(); });
    this.kick();
  }

  /** Runs a pass now, or right after the current one (once the queue connection has come up). */
  kick(): void {
    if (this.stopped || !this.queueUp) return;
    if (this.running) { this.again = true; return; }
    this.running = (async () => {
      do {
        this.again = false;
        try { await this.pass(); } catch (err) { this.log.warn({ err: (err as Error).message }, 'relay pass failed; will retry'); }
      } while (this.again && !this.stopped);
    })().finally(() => { this.running = undefined; });
  }

  /** One full pass; exposed for tests. */
  async pass(): Promise<void> {
    const now = Date.now();
    if (now - this.lastSentinel >= this.opts.sentinelEveryMs) {
      await this.checkSentinel();
      this.lastSentinel = now;
    }
    while ((await this.deliveries.fanOut(this.opts.batch, Date.now(), planDeliveries)) === this.opts.batch && !this.stopped);
    for (;;) {
      const items = await this.deliveries.unqueued(this.opts.batch);
      if (!items.length) break;
      await this.enqueue(items);
      if (items.length < this.opts.batch || this.stopped) break;
    }
    if (now - this.lastOverdue >= this.opts.overdueEveryMs) {
      await this.checkOverdue();
      this.lastOverdue = now;
    }
  }

  private async enqueue(items: Unqueued[]): Promise<void> {
    const now = Date.now();
    // A delivery of a traced change shows the relay's part in that trace (the delivery continues it after).
    const spans = tracingOn ? items.map((i) => spanUnder(i.trace_context, 'outbox relay', { 'svc.tenant_id': i.tenant_id, 'svc.attempt': i.attempt, 'messaging.batch.message_count': items.length })) : [];
    try {
      await this.jobs.addBulk('webhook-delivery', items.map((i) => ({
        data: { tenantId: i.tenant_id, deliveryId: i.id, attempt: i.attempt },
        opts: { jobId: deliveryJobId(i.id, i.attempt), delay: Math.max(0, Number(i.next_attempt_at) - now) },
      })));
    } catch (err) {
      for (const s of spans) if (s) endWithError(s, err);
      throw err;
    }
    for (const s of spans) s?.end();
    // A delivery purged between the read and the add (its tenant deleted meanwhile) must not leave its job queued.
    const gone = await this.marks.markQueued(items, Date.now());
    for (const i of gone) await this.jobs.queue('webhooks').then((q) => q.remove(deliveryJobId(i.id, i.attempt))).catch(() => 0);
  }

  private async checkSentinel(): Promise<void> {
    const client = this.jobs.connection;
    if (await client.exists(this.sentinelKey)) return;
    // First start, or the queue's Redis lost its data: Postgres still holds every pending delivery.
    const n = await this.deliveries.resetQueued();
    if (n) this.log.warn({ deliveries: n }, 'queue sentinel missing: re-enqueueing every pending delivery');
    await client.set(this.sentinelKey, String(Date.now()));
  }

  /** Partial loss (e.g. a failover dropping the last writes): re-add attempts overdue and absent from the queue. */
  private async checkOverdue(): Promise<void> {
    const items = await this.deliveries.overdue(Date.now() - this.opts.overdueGraceMs, 200);
    const lost: Unqueued[] = [];
    for (const i of items) {
      const job = await (await this.jobs.queue('webhooks')).getJob(deliveryJobId(i.id, i.attempt));
      if (!job) lost.push(i);
      else if (await job.isFailed()) await job.retry();
    }
    if (lost.length) {
      this.log.warn({ deliveries: lost.length }, 're-enqueueing overdue deliveries missing from the queue');
      await this.enqueue(lost);
    }
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
    await this.unlisten?.().catch(() => {});
  }
}
