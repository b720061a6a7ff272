import type { Logger } from '../log.js';
import { queueKeys } from '../store/redis-keys.js';
import type { Sql } from '../sql.js';
import { CrossTenantDeliveries, type Unqueued } from '../cross-tenant/webhook-deliveries.js';
import { planDeliveries } from '../webhooks/fan-out.js';
import type { AddOptions, JobQueues } from '../jobs/queues.js';
import type { JobData } from '../jobs/table.js';
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
  /** Most due attempts of one tenant in one queue job (issue 35: BullMQ's per-job scripts paid per batch, not per attempt). */
  jobBatch?: number;
  /** After how long a fan-out's claim that was never confirmed (its relay died), or a lease that ended, is released. */
  claimGraceMs?: number;
  /**
   * Least time between two enqueue passes woken by fan-outs. Each NOTIFY (one per committed login)
   * ran a fan-out and then an enqueue transaction that, with the fan-out adding its own jobs, mostly
   * found nothing: the pass now runs at most once per this gap (retries and manual retries wait ≤ it).
   */
  enqueueGapMs?: number;
  /**
   * This process's consumer of fresh deliveries (src/webhooks/handoff.ts): while it has room, a
   * fan-out's new deliveries go to it under a lease instead of into a queue job.
   */
  handoff?: FreshHandoffPort | undefined;
}

/** What the relay needs of the in-process consumer of fresh deliveries. */
export interface FreshHandoffPort {
  room(): number;
  readonly leaseMs: number;
  take(items: Unqueued[], mark: number): void;
}

/**
 * Moves events from the Postgres outbox into BullMQ, in two crash-safe steps:
 * 1. fan-out: in one transaction, each undispatched outbox row becomes one pending delivery per matching
 *    webhook and is marked dispatched (all or nothing, so never lost and never fanned out twice);
 *    The new deliveries are inserted claimed by this relay (queued_at negative) and their jobs added right
 *    after the commit, then the claim is confirmed (queued_at = when); a relay dying in between leaves
 *    negative claims, released after claimGraceMs by any relay's periodic check.
 * 2. enqueue (whatever else is pending: retries, manual retries, released claims, a lost queue): the
 *    pending attempts not marked queued are taken (locked, so two relays never take the same one),
 *    added to BullMQ and marked, in one transaction. Attempts due now go in batches, one job per
 *    tenant and up to `jobBatch` attempts (jobId "<first delivery>.<attempt>.batch"; a batch of one is a
 *    plain job, jobId "<delivery>.<attempt>"); attempts due later each get their own delayed job. Dying
 *    between add and commit repeats the add: the same attempts in the same order make the same job ids,
 *    which BullMQ ignores; should they differ (other attempts became due meanwhile), an attempt can sit in
 *    two jobs, and the consumer skips whichever finds it already recorded (at least once, docs/webhooks.md).
 * If the queue's Redis loses its data (sentinel key gone), every pending delivery is enqueued again.
 * With a `handoff` (the webhook worker's own consumer, src/webhooks/handoff.ts), step 1's new
 * deliveries go to it instead of the queue while it has room, claimed under a lease; step 2 and the
 * recovery of ended leases still go through the queue.
 */
export class OutboxRelay {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private unlisten: (() => Promise<void>) | undefined;
  /** Set once the queue connection is first up: until then a pass could only fail (it refuses commands while connecting). */
  private queueUp = false;
  private lastSentinel = 0;
  private lastOverdue = 0;
  private lastEnqueue = 0;
  private enqueueTimer: NodeJS.Timeout | undefined;
  private readonly opts: Required<Omit<RelayOptions, 'handoff'>>;
  private readonly handoff: FreshHandoffPort | undefined;
  private readonly sentinelKey: string;
  /** The relay serves every tenant of its database: it reads and writes through the cross-tenant path only. */
  private readonly deliveries: CrossTenantDeliveries;
  /** Where queued_at is marked: a pool with synchronous_commit off when given (a lost mark only repeats an add BullMQ ignores). */
  private readonly marks: CrossTenantDeliveries;
  /**
   * The two steps run as stages of their own, each one pass at a time: a fan-out can run while the
   * previous one's deliveries are being enqueued, so an event committed meanwhile waits for one step,
   * not for a whole pass (issue 35: event-to-receipt latency).
   */
  private readonly fanOutStage: Stage;
  private readonly enqueueStage: Stage;

  constructor(private readonly sql: Sql, private readonly jobs: JobQueues, redisPrefix: string, private readonly log: Logger, opts: RelayOptions = {}, markSql: Sql = sql) {
    this.deliveries = new CrossTenantDeliveries(sql);
    this.marks = new CrossTenantDeliveries(markSql);
    const { handoff, ...rest } = opts;
    this.handoff = handoff;
    this.opts = { pollMs: 1000, batch: 500, sentinelEveryMs: 5000, overdueEveryMs: 30_000, overdueGraceMs: 120_000, jobBatch: 50, claimGraceMs: 10_000, enqueueGapMs: 100, ...rest };
    this.sentinelKey = queueKeys.relaySentinel({ redisPrefix });
    const failed = (err: unknown) => this.log.warn({ err: (err as Error).message }, 'relay pass failed; will retry');
    const stopped = () => this.stopped;
    this.enqueueStage = new Stage(() => { this.lastEnqueue = Date.now(); return this.enqueuePass(); }, failed, stopped);
    this.fanOutStage = new Stage(async () => {
      try { await this.fanOutPass(); } finally { if (!this.stopped) this.enqueueSoon(); }
    }, failed, stopped);
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
    this.fanOutStage.kick();
  }

  /** The enqueue step now, or once enqueueGapMs has passed since its last start (one timer at a time). */
  private enqueueSoon(): void {
    const wait = this.lastEnqueue + this.opts.enqueueGapMs - Date.now();
    if (wait <= 0) { this.enqueueStage.kick(); return; }
    if (this.enqueueTimer) return;
    this.enqueueTimer = setTimeout(() => { this.enqueueTimer = undefined; if (!this.stopped) this.enqueueStage.kick(); }, wait);
  }

  /** One full pass; exposed for tests. */
  async pass(): Promise<void> {
    await this.fanOutPass();
    await this.enqueuePass();
  }

  /**
   * Fans out the outbox; the new deliveries come back claimed for this relay and go to the queue at
   * once (no transaction of their own: issue 35, event-to-receipt latency). A failed add hands them
   * back to the enqueue step; a relay dying before it confirms leaves them to releaseLostClaims.
   */
  private async fanOutPass(): Promise<void> {
    // Here, not in the enqueue step: resetting every queued mark while this stage's fresh claims have
    // their jobs would enqueue them twice; in this stage the reset comes before or after a fan-out, never during.
    const now = Date.now();
    if (now - this.lastSentinel >= this.opts.sentinelEveryMs) {
      await this.checkSentinel();
      this.lastSentinel = now;
    }
    for (;;) {
      // While this process's consumer has room, the new deliveries go to it under a lease (no queue
      // round trip: issue 35, event-to-receipt latency); a fan-out is then cut to that room.
      const room = this.handoff?.room() ?? 0;
      const limit = room > 0 ? Math.min(this.opts.batch, room) : this.opts.batch;
      const claimedAt = Date.now();
      const claim = { claimed: [] as Unqueued[], mark: room > 0 ? -(claimedAt + this.handoff!.leaseMs) : -claimedAt };
      const n = await this.deliveries.fanOut(limit, claimedAt, planDeliveries, claim);
      if (claim.claimed.length && room > 0) {
        // The relay's part of a traced change's trace, as when it adds a job (the delivery continues it).
        const spans = tracingOn ? claim.claimed.map((i) => spanUnder(i.trace_context, 'outbox relay', { 'svc.tenant_id': i.tenant_id, 'svc.attempt': i.attempt, 'messaging.batch.message_count': claim.claimed.length, 'svc.handoff': true })) : [];
        this.handoff!.take(claim.claimed, claim.mark);
        for (const s of spans) s?.end();
      } else if (claim.claimed.length) {
        let jobIds: Map<string, string>;
        try {
          jobIds = await this.enqueue(claim.claimed);
        } catch (err) {
          await this.marks.releaseClaim(claim.claimed, claimedAt);
          throw err;
        }
        const gone = await this.marks.confirmClaim(claim.claimed, Date.now(), claimedAt);
        // Purged between the commit and the add (the purge deletes rows, then jobs): no job may stay behind.
        if (gone.length) {
          const queue = await this.jobs.queue('webhooks');
          for (const id of new Set(gone.map((g) => jobIds.get(g.id)!))) await queue.remove(id).catch(() => 0);
        }
      }
      if (n < limit || this.stopped) break;
    }
  }

  private async enqueuePass(): Promise<void> {
    const now = Date.now();
    for (;;) {
      // On the synchronous_commit=off pool: the transaction only marks queued_at (re-derivable, docs/webhooks.md).
      const items = await this.marks.claimUnqueued(this.opts.batch, async (taken) => { await this.enqueue(taken); });
      if (items.length < this.opts.batch || this.stopped) break;
    }
    if (now - this.lastOverdue >= this.opts.overdueEveryMs) {
      // Fan-out claims never confirmed (their relay died between its commit and its add, or before confirming).
      const lost = await this.deliveries.releaseLostClaims(now - this.opts.claimGraceMs);
      if (lost) { this.log.warn({ deliveries: lost }, 'unconfirmed fan-out claims or ended leases released: re-enqueueing'); await this.marks.claimUnqueued(this.opts.batch, async (taken) => { await this.enqueue(taken); }); }
      await this.checkOverdue();
      this.lastOverdue = now;
    }
  }

  /**
   * Adds the jobs of these attempts: due ones in batches per tenant, later ones each delayed to its
   * time. Answers the job id of each delivery.
   */
  private async enqueue(items: Unqueued[]): Promise<Map<string, string>> {
    const now = Date.now();
    type Add = { data: JobData<'webhook-delivery'>; opts: AddOptions };
    const adds: Add[] = [];
    const due = new Map<string, Unqueued[]>();
    for (const i of items) {
      const delay = Number(i.next_attempt_at) - now;
      if (delay > 0) adds.push(single(i, delay));
      else { let l = due.get(i.tenant_id); if (!l) due.set(i.tenant_id, (l = [])); l.push(i); }
    }
    for (const [tenantId, list] of due) {
      // By id: the same attempts make the same batches (the same job ids) whichever step took them.
      list.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      for (let k = 0; k < list.length; k += this.opts.jobBatch) {
        const chunk = list.slice(k, k + this.opts.jobBatch);
        adds.push(chunk.length === 1 ? single(chunk[0]!, 0) : {
          data: { tenantId, items: chunk.map((i) => ({ deliveryId: i.id, attempt: i.attempt })) } as JobData<'webhook-delivery'>,
          opts: { jobId: `${deliveryJobId(chunk[0]!.id, chunk[0]!.attempt)}.batch` },
        });
      }
    }
    // A delivery of a traced change shows the relay's part in that trace (the delivery continues it after).
    const spans = tracingOn ? items.map((i) => spanUnder(i.trace_context, 'outbox relay', { 'svc.tenant_id': i.tenant_id, 'svc.attempt': i.attempt, 'messaging.batch.message_count': items.length })) : [];
    try {
      await this.jobs.addBulk('webhook-delivery', adds);
    } catch (err) {
      for (const s of spans) if (s) endWithError(s, err);
      throw err;
    }
    for (const s of spans) s?.end();
    const jobIds = new Map<string, string>();
    for (const a of adds) {
      const id = a.opts.jobId!;
      if (a.data.items) for (const i of a.data.items) jobIds.set(i.deliveryId, id);
      else jobIds.set(a.data.deliveryId!, id);
    }
    return jobIds;
  }

  private async checkSentinel(): Promise<void> {
    const client = this.jobs.connection;
    if (await client.exists(this.sentinelKey)) return;
    // First start, or the queue's Redis lost its data: Postgres still holds every pending delivery.
    const n = await this.deliveries.resetQueued(Date.now());
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
      // Each on its own (an attempt of a batch job has no job of its own id: should that batch still
      // wait in the queue, the attempt runs twice at worst and the later run finds it recorded).
      await this.jobs.addBulk('webhook-delivery', lost.map((i) => single(i, 0)));
    }
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.enqueueTimer);
    await this.fanOutStage.idle();
    await this.enqueueStage.idle();
    await this.unlisten?.().catch(() => {});
  }
}

/** The job of one attempt: jobId "<delivery>.<attempt>", so adding it again is a no-op. */
function single(i: Unqueued, delay: number) {
  return { data: { tenantId: i.tenant_id, deliveryId: i.id, attempt: i.attempt }, opts: { jobId: deliveryJobId(i.id, i.attempt), delay: Math.max(0, delay) } };
}

/** Runs `step` one at a time: a kick while it runs runs it once more right after. */
class Stage {
  private running: Promise<void> | undefined;
  private again = false;

  constructor(private readonly step: () => Promise<void>, private readonly failed: (err: unknown) => void, private readonly stopped: () => boolean) {}

  kick(): void {
    if (this.running) { this.again = true; return; }
    this.running = (async () => {
      do {
        this.again = false;
        try { await this.step(); } catch (err) { this.failed(err); }
      } while (this.again && !this.stopped());
    })().finally(() => { this.running = undefined; });
  }

  async idle(): Promise<void> {
    while (this.running) await this.running;
  }
}
