import t from 'tap';
import type { ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { recordEvents } from '../../src/events/outbox.js';
import { JobQueues } from '../../src/jobs/queues.js';
import { createLogger } from '../../src/log.js';
import { deliveryJobId } from '../../src/webhooks/queue.js';
import { startWebhookWorker } from '../../workers/webhook-worker.js';
import { testConfig } from '../helpers/env.js';
import { forkReady, waitFor } from '../helpers/processes.js';
import { addWebhook, createTenant, emit, hooksOf, isolatedDatabase, startReceiver, testSql } from './fixtures.js';

// The webhook worker's relay hands the deliveries it has just fanned out to its own consumer (no
// BullMQ job on that path, src/webhooks/handoff.ts). What a receiver and an administrator see must not
// change: the same request, the same records; retries and recovery still go through the queue.
const workerFile = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../workers/webhook-worker.js');
const SECRET = 'whsec_handoff_0123456789abcdef';
const db = await isolatedDatabase();
const config = testConfig({ WEBHOOK_ALLOW_PRIVATE: 'true', DATABASE_URL: db.url });
const queueOff = testConfig({ WEBHOOK_ALLOW_PRIVATE: 'true', DATABASE_URL: db.url, WEBHOOK_FRESH_HANDOFF: 'false', REDIS_PREFIX: config.redisPrefix });
const sql = testSql(config);
const jobQueues = new JobQueues(config);
const children = new Set<ChildProcess>();
const log = createLogger('silent');
t.teardown(async () => {
  for (const c of children) c.kill('SIGKILL');
  await jobQueues.close();
  await sql.end({ timeout: 2 });
  await db.drop();
});

/** Every job of the webhooks queue that carries this delivery (alone or in a batch), in any state. */
async function jobsOf(deliveryId: string) {
  const queue = await jobQueues.queue('webhooks');
  const all = await queue.getJobs(['completed', 'waiting', 'active', 'delayed', 'failed', 'prioritized']);
  return all.filter((j) => j.data.deliveryId === deliveryId || (j.data.items as Array<{ deliveryId: string }> | undefined)?.some((i) => i.deliveryId === deliveryId));
}

/** What an administrator and the delivery log see of one delivery, without its ids and times. */
async function recorded(tenant: string, deliveryId: string) {
  const [d] = await sql<Array<Record<string, unknown>>>`select status, attempt, max_attempt, response_status, error, queued_at, counted, completed_at is not null as completed, request_body from webhook_deliveries where tenant_id = ${tenant} and id = ${deliveryId}`;
  const attempts = await sql<Array<Record<string, unknown>>>`select attempt, status, response_status, error from webhook_delivery_attempts where tenant_id = ${tenant} and delivery_id = ${deliveryId} order by attempt`;
  const logs = await sql<Array<{ body: Record<string, unknown> }>>`select body from log_records where tenant_id = ${tenant} and log_type = 'webhook_delivery' and body->>'delivery_id' = ${deliveryId}`;
  return { delivery: d, attempts, logs: logs.map((l) => { const { duration_ms: _, webhook_id: __, delivery_id: ___, ...rest } = l.body; return rest; }) };
}

t.test('a fresh delivery handed over in the worker is sent and recorded exactly as one that went through the queue', async (t) => {
  const tenant = await createTenant(sql, 'handoff-same');
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const hook = await addWebhook(sql, config, tenant, { url: `${rx.url}/hook`, secret: SECRET, events: ['user.created'], headers: { 'X-Custom': 'yes' } });
  const deliver = async (cfg: typeof config, user: string) => {
    const worker = await startWebhookWorker(cfg, log, { relay: { pollMs: 100 } });
    try {
      await emit(sql, { tenantId: tenant, event: 'user.created', data: { user_id: user } });
      await waitFor(async () => (await sql`select 1 from webhook_deliveries where tenant_id = ${tenant} and request_body->'data'->>'user_id' = ${user} and status = 'success'`).length === 1, 15_000);
    } finally { await worker.close(); }
    const r = rx.received.find((x) => JSON.parse(x.body).data.user_id === user)!;
    return { r, id: r.headers['x-svc-delivery'] as string };
  };
  const handed = await deliver(config, 'h1');
  const queued = await deliver(queueOff, 'q1');

  t.same(await jobsOf(handed.id), [], 'the handed-over delivery had no queue job');
  t.equal((await jobsOf(queued.id)).length, 1, 'the other went through one');
  for (const { r } of [handed, queued]) {
    t.equal(r.headers['x-svc-signature'], 'sha256=' + createHmac('sha256', SECRET).update(`${r.headers['x-svc-timestamp']}.${r.body}`).digest('hex'), 'signed');
    t.equal(r.headers['x-svc-event'], 'user.created');
    t.equal(r.headers['x-custom'], 'yes');
  }
  const a = await recorded(tenant, handed.id);
  const b = await recorded(tenant, queued.id);
  t.same(a.delivery, { ...b.delivery, request_body: { ...(b.delivery!.request_body as object), data: { user_id: 'h1' }, timestamp: (a.delivery!.request_body as { timestamp: string }).timestamp } }, 'the same delivery row');
  t.same(a.delivery!.queued_at, null, 'no claim left behind');
  t.same(a.attempts, b.attempts, 'the same attempt rows');
  t.same(a.attempts, [{ attempt: 1, status: 'success', response_status: 200, error: null }]);
  t.same(a.logs, b.logs, 'the same delivery log record');
  t.equal(a.logs.length, 1);
  const w = (await hooksOf(sql, tenant).get(hook.id))!;
  t.same([Number(w.total_deliveries), Number(w.failed_deliveries), Number(w.total_attempts), Number(w.failed_attempts)], [2, 0, 2, 0], 'counted once each');
});

t.test('a handed-over attempt that fails is retried through the queue, with the same X-Svc-Delivery', async (t) => {
  const tenant = await createTenant(sql, 'handoff-retry');
  const rx = await startReceiver((_, n) => (n === 1 ? { status: 500 } : { status: 200 }));
  t.teardown(() => rx.close());
  const hook = await addWebhook(sql, config, tenant, { url: rx.url, events: ['user.created'], retry_policy: { max_retries: 2, retry_interval: 1 } });
  const worker = await startWebhookWorker(config, log, { relay: { pollMs: 100 } });
  t.teardown(() => worker.close());
  await emit(sql, { tenantId: tenant, event: 'user.created', data: { user_id: 'r1' } });
  await waitFor(() => rx.received.length === 2, 15_000);
  const id = rx.received[0]!.headers['x-svc-delivery'] as string;
  t.equal(rx.received[1]!.headers['x-svc-delivery'], id);
  await waitFor(async () => (await hooksOf(sql, tenant).delivery(hook.id, id))!.delivery.status === 'success', 10_000);
  const jobs = await jobsOf(id);
  t.same(jobs.map((j) => j.id), [deliveryJobId(id, 2)], 'the retry was a queue job; the first attempt was not');
  t.same((await hooksOf(sql, tenant).delivery(hook.id, id))!.attempts.map((x) => [x.attempt, x.status, x.response_status]), [[1, 'failed', 500], [2, 'success', 200]]);
});

t.test('a delivery held longer than its lease keeps its claim: the relay does not release it to be sent again', async (t) => {
  const tenant = await createTenant(sql, 'handoff-renew');
  // The request is never answered (3 s timeout); the lease is 300 ms and ended claims are released
  // after 50 ms more, checked every 100 ms.
  const rx = await startReceiver(() => ({ hang: true }));
  t.teardown(() => rx.close());
  await addWebhook(sql, config, tenant, { url: rx.url, events: ['user.created'], timeout: 3 });
  const worker = await startWebhookWorker(config, log, { relay: { pollMs: 100, claimGraceMs: 50, overdueEveryMs: 100 }, handoffLeaseMs: 300 });
  t.teardown(() => worker.close());
  await emit(sql, { tenantId: tenant, event: 'user.created', data: { user_id: 'slow' } });
  await waitFor(() => rx.received.length === 1, 10_000);
  const held = async () => Number((await sql<Array<{ q: string }>>`select queued_at::text as q from webhook_deliveries where tenant_id = ${tenant}`)[0]!.q);
  const first = await held();
  t.ok(first < -Date.now(), 'held under a lease that ends in the future');
  await waitFor(async () => (await held()) < first, 5_000);
  t.pass('the lease was renewed while the request was out');
  await new Promise((r) => setTimeout(r, 1_000));
  t.equal(rx.received.length, 1, 'not released to the queue, so not sent twice');
});

t.test('a worker killed after handing deliveries over loses none: once their lease ends they go through the queue', async (t) => {
  const tenant = await createTenant(sql, 'handoff-kill');
  let hang = true;
  const rx = await startReceiver(() => (hang ? { hang: true } : {}));
  t.teardown(() => rx.close());
  const hook = await addWebhook(sql, config, tenant, { url: rx.url, events: ['user.created'], timeout: 60 });
  const env = { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'silent', WEBHOOK_ALLOW_PRIVATE: 'true', REDIS_PREFIX: config.redisPrefix, DATABASE_URL: config.databaseUrl, REDIS_URL: config.redisUrl };
  const child = await forkReady(workerFile, env, children);
  const n = 3;
  await sql.begin((tx) => recordEvents(tx, Array.from({ length: n }, (_, i) => ({ tenantId: tenant, event: 'user.created' as const, data: { user_id: `k${i}` } }))));
  await waitFor(() => rx.received.length === n, 15_000);
  const claims = await sql<Array<{ q: string }>>`select queued_at::text as q from webhook_deliveries where tenant_id = ${tenant}`;
  t.ok(claims.every((c) => Number(c.q) < -Date.now()), 'each held by the worker under its lease');
  await new Promise<void>((resolve) => { child.once('exit', () => resolve()); child.kill('SIGKILL'); });
  hang = false;
  // A worker started now: its relay releases the ended leases (default 15 s, then 100 ms of grace) and queues them.
  const second = await startWebhookWorker(config, log, { relay: { pollMs: 100, claimGraceMs: 100, overdueEveryMs: 500 } });
  t.teardown(() => second.close());
  await waitFor(async () => (await sql`select 1 from webhook_deliveries where tenant_id = ${tenant} and status = 'success'`).length === n, 40_000, 200);
  const ids = new Set(rx.received.map((r) => r.headers['x-svc-delivery'] as string));
  t.equal(ids.size, n, 'sent again with their X-Svc-Delivery, so the receiver can de-duplicate');
  t.equal(rx.received.length, 2 * n, 'each sent once more, no more');
  for (const id of ids) t.equal((await jobsOf(id)).length, 1, 'recovered through a queue job');
  t.equal((await sql`select 1 from webhook_delivery_attempts where tenant_id = ${tenant}`).length, n, 'one attempt recorded per delivery');
  const w = (await hooksOf(sql, tenant).get(hook.id))!;
  t.same([Number(w.total_deliveries), Number(w.total_attempts)], [n, n]);
});

t.test('a worker closing gives back what it holds unsent: queued, and sent by the next worker', async (t) => {
  const tenant = await createTenant(sql, 'handoff-close');
  // One send slot; the first request is held until its 1 s timeout, the others wait for the slot.
  const rx = await startReceiver((_, n) => (n === 1 ? { hang: true } : {}));
  t.teardown(() => rx.close());
  await addWebhook(sql, config, tenant, { url: rx.url, events: ['user.created'], timeout: 1, retry_policy: { max_retries: 0 } });
  const one = testConfig({ WEBHOOK_ALLOW_PRIVATE: 'true', DATABASE_URL: db.url, WEBHOOK_CONCURRENCY: '1', REDIS_PREFIX: config.redisPrefix });
  const worker = await startWebhookWorker(one, log, { relay: { pollMs: 100 } });
  await sql.begin((tx) => recordEvents(tx, Array.from({ length: 3 }, (_, i) => ({ tenantId: tenant, event: 'user.created' as const, data: { user_id: `c${i}` } }))));
  await waitFor(() => rx.received.length === 1, 10_000);
  await worker.close();
  // Given back, they were queued by the closing worker's relay (whose consumer may have run them before it stopped).
  const rows = await sql<Array<{ id: string }>>`select id from webhook_deliveries where tenant_id = ${tenant} and error is distinct from 'timeout after 1 s'`;
  t.equal(rows.length, 2, 'the two that waited for the slot');
  for (const r of rows) t.equal((await jobsOf(r.id)).length, 1, 'went to the queue');
  const next = await startWebhookWorker(config, log, { relay: { pollMs: 100 } });
  t.teardown(() => next.close());
  await waitFor(async () => (await sql`select 1 from webhook_deliveries where tenant_id = ${tenant} and status = 'success'`).length === 2, 15_000);
  t.equal(rx.received.length, 3, 'each sent once');
});
