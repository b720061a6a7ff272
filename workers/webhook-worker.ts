import { pathToFileURL } from 'node:url';
import { runAlone } from './queue-process.js';
import { DelayedError, type Job } from 'bullmq';
import type { Config } from '../src/config.js';
import { OutboxRelay, type RelayOptions } from '../src/events/relay.js';
import type { Logger } from '../src/log.js';
import { Store } from '../src/store/index.js';
import { createSql, type Sql } from '../src/sql.js';
import { WebhookRepository } from '../src/store/webhooks.js';
import { CrossTenantAttempts, type AttemptKey, type AttemptRecord, type LoadedAttempt } from '../src/cross-tenant/webhook-attempts.js';
import { Batcher } from '../src/webhooks/batcher.js';
import { SendSlots } from '../src/webhooks/send-slots.js';
import { FreshHandoff, type HeldClaim } from '../src/webhooks/handoff.js';
import { deliveryHeaders } from '../src/webhooks/message.js';
import { deliveryJobId } from '../src/webhooks/queue.js';
import type { SchemaTypes } from '../src/generated/types.js';
import { startConsumers } from '../src/jobs/consumers.js';
import { JobQueues } from '../src/jobs/queues.js';
import { backoffMs } from '../src/webhooks/retry.js';
import { webhookSecret } from '../src/webhooks/secret-box.js';
import { postWebhook } from '../src/webhooks/sender.js';
import { PiiVault } from '../src/pii/vault.js';
import { openFields } from '../src/sealed-fields.js';
import { configureFieldSealing } from '../src/sealed-fields.js';
import { annotate, continueTrace } from '../src/tracing/tracer.js';
import { startTracing } from '../src/tracing/start.js';
import { countWebhookDelivery, trackOutbox } from '../src/metrics.js';
import { CrossTenantDeliveries, outboxBacklog } from '../src/cross-tenant/webhook-deliveries.js';

export interface RunningWebhookWorker {
  close(): Promise<void>;
}

/** What a delivery attempt runs with. */
export interface WebhookContext { store: Store; config: Config; log: Logger; jobs: JobQueues; attempts: AttemptBatches; sends: SendSlots }

/**
 * The loads and attempt records of the attempts in flight, each batch one statement (issue 35): a
 * worker running WEBHOOK_CONCURRENCY attempts makes one read and one commit per batch instead of
 * several round trips and a commit per attempt. An attempt's job ends only once its record committed,
 * so a worker that dies with a batch unwritten leaves those jobs to run again (at least once).
 */
export interface AttemptBatches {
  load(key: AttemptKey): Promise<LoadedAttempt | null>;
  record(r: AttemptRecord): Promise<boolean>;
  /** The pool whose commits do not wait for the WAL flush: for `queued_at` marks only, which the relay derives again. */
  asyncSql: Sql;
}

export function attemptBatches(sql: Sql, asyncSql: Sql): AttemptBatches {
  const db = new CrossTenantAttempts(sql);
  const loads = new Batcher<AttemptKey, LoadedAttempt | null>((keys) => db.load(keys));
  const records = new Batcher<AttemptRecord, boolean>((items) => db.record(items));
  return { load: (k) => loads.submit(k), record: (r) => records.submit(r), asyncSql };
}

/**
 * The webhook worker process: the outbox relay plus the consumer of delivery attempts (src/jobs/table.ts,
 * `webhook-delivery`, concurrency WEBHOOK_CONCURRENCY). Started by the supervisor for role `webhook-worker`.
 */
export async function startWebhookWorker(config: Config, log: Logger, opts: { relay?: RelayOptions; schedules?: boolean; handoffLeaseMs?: number } = {}): Promise<RunningWebhookWorker> {
  const tracing = config.tracing ? startTracing(config.tracing, 'webhook-worker') : null;
  const sql = createSql(config);
  // queued_at marks only (relay and retries): lost in a Postgres crash, they are derived again (docs/webhooks.md).
  const asyncSql = createSql(config, { max: 2, asyncCommit: true });
  configureFieldSealing(config.keyEncryptionKey);
  const jobs = new JobQueues(config);
  const store = new Store(sql, PiiVault.fromConfig(config, sql));
  const ctx: WebhookContext = { store, config, log, jobs, attempts: attemptBatches(sql, asyncSql), sends: new SendSlots(config.webhookConcurrency) };
  // Fresh deliveries of this process's relay run here at once; retries and recovery stay on the queue (docs/decisions.md).
  let relay: OutboxRelay | undefined;
  const handoff = config.webhookFreshHandoff ? new FreshHandoff(
    (item, claim) => runAttempt(ctx, item.tenant_id, item.id, item.attempt, null, claim, item.fresh && { ...item.fresh, tombstoned: false }),
    new CrossTenantDeliveries(sql),
    {
      limit: 4 * config.webhookConcurrency, leaseMs: opts.handoffLeaseMs ?? 15_000,
      released: () => relay?.kick(),
      failed: (err) => log.warn({ err: (err as Error).message }, 'handed-off delivery failed; its lease will run out and the queue retries it'),
    },
  ) : undefined;
  relay = new OutboxRelay(sql, jobs, config.redisPrefix, log, { ...opts.relay, handoff }, asyncSql);
  const consumers = await startConsumers('webhook-worker', ctx, { config, log, jobs, schedules: opts.schedules });
  await relay.start();
  // The outbox's backlog, read at scrape time by the process that relays it (svc_outbox_pending, svc_outbox_lag_seconds).
  const untrackOutbox = trackOutbox(() => outboxBacklog(sql));
  let closing: Promise<void> | undefined;
  return {
    close: () => (closing ??= (async () => {
      untrackOutbox();
      // First the handoff: what it holds unsent goes back to the queue through this relay, still running.
      await handoff?.close();
      await relay!.close();
      // Lets in-flight attempts finish (each bounded by its webhook timeout) before closing.
      await consumers.close();
      await jobs.close();
      await sql.end({ timeout: 5 });
      await asyncSql.end({ timeout: 5 });
      await tracing?.close();
    })()),
  };
}

/**
 * A job's attempts: one, or a batch of one tenant's due attempts (src/events/relay.ts), sent
 * concurrently (each within the process's send slots) and each recorded as soon as it is answered,
 * with whatever other attempts are being recorded then. The job ends once every attempt of it is
 * recorded. If recording fails (Postgres down), the job fails after its other attempts have ended and
 * runs again later: attempts already recorded are skipped as stale, the others sent again. A worker
 * killed mid-batch leaves the job active: found stalled, it runs again the same way (at least once:
 * an attempt sent but not yet recorded is sent twice, with the same X-Svc-Delivery).
 */
export async function deliver(data: SchemaTypes['jobs.webhook-delivery'], ctx: WebhookContext, job: Job, token: string | undefined): Promise<string> {
  const { tenantId } = data;
  if (!data.items) {
    // One attempt: a job re-added without its delay (e.g. after queue data loss) waits for its due time.
    return runAttempt(ctx, tenantId, data.deliveryId!, data.attempt!, async (dueAt) => {
      if (!token) return;
      await job.moveToDelayed(dueAt, token);
      throw new DelayedError();
    });
  }
  // A batch holds attempts that were due when the relay took them: none waits here.
  const settled = await Promise.allSettled(data.items.map((i) => runAttempt(ctx, tenantId, i.deliveryId, i.attempt, null)));
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  const counts = new Map<string, number>();
  for (const r of settled) if (r.status === 'fulfilled') counts.set(r.value, (counts.get(r.value) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${k} ${n}`).join(', ');
}

/**
 * One attempt of one delivery. Idempotent: an attempt that is no longer current does nothing.
 * `wait`: what to do when the attempt is not due yet (null: send anyway). `held`: the attempt of a
 * fresh delivery handed over by this process's relay (src/webhooks/handoff.ts), sent only while its
 * claim is still the one stored; everything after the send is the same as for a queue job's attempt.
 */
async function runAttempt({ store, config, log, jobs, attempts, sends }: WebhookContext, tenantId: string, deliveryId: string, attempt: number, wait: ((dueAt: number) => Promise<void>) | null, held?: HeldClaim, fresh?: LoadedAttempt): Promise<string> {
  // Each job names its tenant: the delivery is read and recorded by (tenant, delivery), in batches. A
  // delivery handed over fresh comes with the rows its fan-out wrote and read (its tenant was live then).
  const loaded = fresh ?? await attempts.load({ tenantId, deliveryId });
  if (!loaded) return 'gone';
  const { delivery: d, webhook: w } = loaded;
  if (d.status !== 'pending' || d.attempt !== attempt) return 'stale';
  // Given back (the process is closing) or released since: the queue has it now.
  if (held && Number(d.queued_at) !== held.mark) return 'released';
  // Nothing more is sent for a tenant being deleted.
  if (loaded.tombstoned) return 'gone';
  if (w.status !== 'active') {
    await store.forTenant(tenantId).webhooks.abandonDelivery(deliveryId, attempt, 'webhook is inactive', Date.now());
    return 'inactive';
  }
  if (wait && Number(d.next_attempt_at) > Date.now() + 1000) await wait(Number(d.next_attempt_at));
  // Addresses are sealed at rest; the receiver gets them in clear (over its HTTPS).
  const body = JSON.stringify({ event: d.request_body.event, timestamp: d.request_body.timestamp, data: openFields(d.tenant_id, d.request_body.data) });
  const secret = webhookSecret(w, config.keyEncryptionKey);
  // The delivery continues the trace of the request that caused its event, and passes it on (W3C traceparent).
  const sent = await sends.run(() => {
    if (held && !held.begin()) return Promise.resolve(null);
    // Signed when it leaves (X-Svc-Timestamp is the send time), not while waiting for a slot.
    const headers = deliveryHeaders({ secret, event: d.event, deliveryId, body, custom: w.headers });
    const startedAt = Date.now();
    return continueTrace(d.trace_context, 'webhook deliver', { 'svc.tenant_id': tenantId, 'svc.webhook_id': w.id, 'svc.event': d.event, 'svc.attempt': attempt },
      async (traceHeaders, span) => {
        const res = await postWebhook(w.url, { ...headers, ...traceHeaders }, body, w.timeout_s * 1000, config.webhookAllowPrivate);
        annotate({ 'http.response.status_code': res.status ?? 0 }, span);
        return { r: res, startedAt };
      });
  });
  if (!sent) return 'released';
  const { r, startedAt } = sent;
  const completedAt = Date.now();
  countWebhookDelivery(r.ok, r.status);
  const nextAttemptAt = !r.ok && attempt < d.max_attempt ? completedAt + backoffMs(attempt, w.retry_interval_s) : null;
  // The attempt row, the delivery's state, the counters and the attempt's log record, committed with
  // the other attempts of its batch. Not recorded: a duplicate job, or a tenant tombstoned while the
  // request was out (nothing is recorded, no retry queued; its purge removes the rest).
  const recorded = await attempts.record({
    tenantId, deliveryId, attempt, webhookId: w.id, event: d.event,
    ok: r.ok, responseStatus: r.status, responseTimeMs: r.durationMs, error: r.error, startedAt, completedAt, nextAttemptAt,
  });
  if (recorded && nextAttemptAt !== null) {
    // Fast path; if this fails (or the process dies here) the relay finds the attempt unqueued and adds it.
    try {
      await jobs.add('webhook-delivery', { tenantId, deliveryId, attempt: attempt + 1 }, { jobId: deliveryJobId(deliveryId, attempt + 1), delay: Math.max(0, nextAttemptAt - Date.now()) });
      await new WebhookRepository(attempts.asyncSql, tenantId).markQueued(deliveryId, attempt + 1, Date.now());
    } catch (err) {
      log.debug({ err: (err as Error).message }, 'could not enqueue retry; the relay will');
    }
  }
  return r.ok ? 'success' : nextAttemptAt !== null ? 'retry' : 'failed';
}

// `node dist/workers/webhook-worker.js`: run just this consumer and relay (used by crash tests and for
// running delivery apart from the supervisor). Configuration comes from the environment as usual.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) void runAlone('webhook-worker');
