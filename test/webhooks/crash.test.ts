import t from 'tap';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { OutboxRelay } from '../../src/events/relay.js';
import { createLogger } from '../../src/log.js';
import { JobQueues } from '../../src/jobs/queues.js';
import { deliveryJobId } from '../../src/webhooks/queue.js';
import { testConfig } from '../helpers/env.js';
import { forkReady, PrivateRedis, waitFor } from '../helpers/processes.js';
import { addWebhook, createTenant, emit, hooksOf, isolatedDatabase, startReceiver, testSql } from './fixtures.js';

// Crash safety with the consumer in a child process (node dist/workers/webhook-worker.js) that we kill,
// and the queue on a private Redis that we wipe.
const workerFile = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../workers/webhook-worker.js');
const qredis = new PrivateRedis();
await qredis.start();
const db = await isolatedDatabase();
const config = testConfig({ WEBHOOK_ALLOW_PRIVATE: 'true', QUEUE_REDIS_URL: qredis.url, DATABASE_URL: db.url });
const sql = testSql(config);
const tenant = await createTenant(sql, 'whcrash');
const hooks = hooksOf(sql, tenant);
const children = new Set<ChildProcess>();
t.teardown(async () => {
  for (const c of children) c.kill('SIGKILL');
  await sql.end({ timeout: 2 });
  await qredis.destroy();
  await db.drop();
});

function startChild(): Promise<ChildProcess> {
  const env = { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'silent', WEBHOOK_ALLOW_PRIVATE: 'true', REDIS_PREFIX: config.redisPrefix, QUEUE_REDIS_URL: qredis.url, DATABASE_URL: config.databaseUrl, REDIS_URL: config.redisUrl };
  return forkReady(workerFile, env, children);
}

function kill(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => { child.once('exit', () => resolve()); child.kill('SIGKILL'); });
}

t.test('events committed while no worker runs are delivered once one starts (outbox survives)', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const hook = await addWebhook(sql, config, tenant, { url: rx.url, events: ['user.created'] });
  for (let i = 0; i < 3; i++) await emit(sql, { tenantId: tenant, event: 'user.created', data: { user_id: `before-${i}` } });
  const child = await startChild();
  await waitFor(() => rx.received.length === 3, 20_000);
  t.same(rx.received.map((r) => JSON.parse(r.body).data.user_id).sort(), ['before-0', 'before-1', 'before-2']);
  await waitFor(async () => (await hooks.countDeliveries(hook.id, { status: 'success' })) === 3);
  await kill(child);
});

t.test('a worker killed mid-delivery: the delivery is made after restart, with the same X-Svc-Delivery', async (t) => {
  let hang = true;
  const rx = await startReceiver(() => (hang ? { hang: true } : { status: 200 }));
  t.teardown(() => rx.close());
  const hook = await addWebhook(sql, config, tenant, { url: rx.url, events: ['auth.password_changed'], timeout: 60 });
  const child = await startChild();
  await emit(sql, { tenantId: tenant, event: 'auth.password_changed', data: { user_id: 'victim' } });
  await waitFor(() => rx.received.length === 1, 20_000);
  await kill(child); // the receiver has the request, the worker never recorded an outcome
  hang = false;
  const second = await startChild();
  await waitFor(() => rx.received.length >= 2, 60_000, 200);
  t.equal(rx.received[1]!.headers['x-svc-delivery'], rx.received[0]!.headers['x-svc-delivery'], 'receivers can de-duplicate');
  const id = rx.received[0]!.headers['x-svc-delivery'] as string;
  await waitFor(async () => (await hooks.delivery(hook.id, id))!.delivery.status === 'success', 20_000);
  t.equal(new Set(rx.received.map((r) => r.headers['x-svc-delivery'])).size, 1, 'one delivery');
  await kill(second);
});

t.test('the queue Redis loses its data: pending deliveries are enqueued again from Postgres', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  await addWebhook(sql, config, tenant, { url: rx.url, events: ['security.alert'] });
  await emit(sql, { tenantId: tenant, event: 'security.alert', data: { reason: 'r1' } });
  const child = await startChild();
  await waitFor(async () => (await sql`select 1 from webhook_deliveries where tenant_id = ${tenant} and event = 'security.alert' and status = 'success'`).length === 1, 20_000);
  await kill(child);
  // With no consumer running, a relay pass fans r2 out, adds its job to BullMQ and marks it queued...
  await emit(sql, { tenantId: tenant, event: 'security.alert', data: { reason: 'r2' } });
  const jobQueues = new JobQueues(config);
  const queue = await jobQueues.queue('webhooks');
  const relay = new OutboxRelay(sql, jobQueues, config.redisPrefix, createLogger('silent'));
  await queue.waitUntilReady();
  await relay.pass();
  const [row] = await sql<{ id: string; queued_at: unknown }[]>`select id, queued_at from webhook_deliveries where tenant_id = ${tenant} and request_body->'data'->>'reason' = 'r2'`;
  t.ok(row?.queued_at, 'the delivery is marked queued');
  t.ok(await queue.getJob(deliveryJobId(row!.id, 1)), 'and its job is in the queue');
  await jobQueues.close();
  // ...then the queue's Redis loses everything.
  const r = new Redis(qredis.url);
  await r.flushall();
  await r.quit();
  await startChild();
  await waitFor(() => rx.received.some((r) => JSON.parse(r.body).data.reason === 'r2'), 30_000);
  t.pass('r2 delivered after the queue lost it');
});
