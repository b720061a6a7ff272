import t from 'tap';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CrossTenantAttempts, type AttemptRecord } from '../../src/cross-tenant/webhook-attempts.js';
import { recordEvents } from '../../src/events/outbox.js';
import { createLogger } from '../../src/log.js';
import { newId } from '../../src/store/ids.js';
import { STATS_SHARDS } from '../../src/store/webhooks.js';
import { JobQueues } from '../../src/jobs/queues.js';
import { startWebhookWorker } from '../../workers/webhook-worker.js';
import { testConfig } from '../helpers/env.js';
import { forkReady, waitFor } from '../helpers/processes.js';
import { addWebhook, createTenant, hooksOf, isolatedDatabase, startReceiver, testSql } from './fixtures.js';

// The webhook worker records the attempts it has in flight in batches, one statement and one commit per
// batch (issue 35). Each attempt must still be recorded with its own outcome, once, and a worker killed
// with a batch unwritten must lose nothing: its jobs run again and their attempts are recorded then.
const workerFile = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../workers/webhook-worker.js');
const db = await isolatedDatabase();
const config = testConfig({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CONCURRENCY: '32', DATABASE_URL: db.url });
const sql = testSql(config);
const children = new Set<ChildProcess>();
t.teardown(async () => {
  for (const c of children) c.kill('SIGKILL');
  await sql.end({ timeout: 2 });
  await db.drop();
});

t.test('one batch records each attempt with its own outcome, once; stale, repeated and tombstoned ones change nothing', async (t) => {
  const a = await createTenant(sql, 'batch-a');
  const b = await createTenant(sql, 'batch-b');
  const hookA = await addWebhook(sql, config, a, { url: 'http://127.0.0.1:9/hook' });
  const hookB = await addWebhook(sql, config, b, { url: 'http://127.0.0.1:9/hook' });
  const pending = async (tenant: string, hook: string, attempt = 1) => {
    const id = newId('whd');
    await sql`insert into webhook_deliveries (tenant_id, id, webhook_id, event, status, attempt, max_attempt, request_body, triggered_at, next_attempt_at, queued_at)
      values (${tenant}, ${id}, ${hook}, 'user.created', 'pending', ${attempt}, 3, ${sql.json({ event: 'user.created', timestamp: new Date().toISOString(), data: {} })}, ${Date.now()}, ${Date.now()}, ${Date.now()})`;
    return id;
  };
  const [ok, retry, fail, stale] = [await pending(a, hookA.id), await pending(a, hookA.id), await pending(a, hookA.id), await pending(a, hookA.id)];
  const gone = await pending(b, hookB.id);
  await sql`update tenants set status = 'deleting' where id = ${b}`;
  const now = Date.now();
  const rec = (tenantId: string, webhookId: string, deliveryId: string, o: Partial<AttemptRecord>): AttemptRecord => ({
    tenantId, deliveryId, webhookId, attempt: 1, event: 'user.created', ok: true, responseStatus: 200, responseTimeMs: 5, error: null, startedAt: now - 5, completedAt: now, nextAttemptAt: null, ...o,
  });
  const store = new CrossTenantAttempts(sql);
  const done = await store.record([
    rec(a, hookA.id, ok, {}),
    rec(a, hookA.id, retry, { ok: false, responseStatus: 500, error: 'HTTP 500', nextAttemptAt: now + 60_000 }),
    rec(a, hookA.id, fail, { ok: false, responseStatus: null, error: 'connection refused' }),
    rec(a, hookA.id, ok, { responseStatus: 201 }),
    rec(a, hookA.id, stale, { attempt: 2 }),
    rec(b, hookB.id, gone, {}),
  ]);
  t.same(done, [true, true, true, false, false, false], 'recorded: the three current attempts; not: a repeat in the batch, a stale attempt, a tombstoned tenant');

  const deliveries = new Map((await sql<Array<{ id: string; status: string; attempt: number; response_status: number | null; next_attempt_at: number; completed_at: number | null; queued_at: number | null }>>`
    select id, status, attempt, response_status, next_attempt_at, completed_at, queued_at from webhook_deliveries where tenant_id in (${a}, ${b})`).map((r) => [r.id, r]));
  t.match(deliveries.get(ok), { status: 'success', attempt: 1, response_status: 200, completed_at: now, queued_at: null });
  t.match(deliveries.get(retry), { status: 'pending', attempt: 2, response_status: 500, next_attempt_at: now + 60_000, completed_at: null, queued_at: null }, 'a retry is due, unqueued, for the relay or the worker to add');
  t.match(deliveries.get(fail), { status: 'failed', attempt: 1, response_status: null, completed_at: now });
  t.match(deliveries.get(stale), { status: 'pending', attempt: 1 }, 'the stale attempt left its delivery alone');
  t.match(deliveries.get(gone), { status: 'pending', attempt: 1 }, "the tombstoned tenant's delivery is untouched");

  const attempts = await sql<Array<{ delivery_id: string; attempt: number; status: string; response_status: number | null; error: string | null }>>`
    select delivery_id, attempt, status, response_status, error from webhook_delivery_attempts where tenant_id in (${a}, ${b}) order by delivery_id`;
  t.same(attempts.map((x) => [x.delivery_id, x.attempt, x.status, x.response_status, x.error]).sort(), [
    [ok, 1, 'success', 200, null], [retry, 1, 'failed', 500, 'HTTP 500'], [fail, 1, 'failed', null, 'connection refused'],
  ].sort(), 'one attempt row each, with its own status');

  const hooks = hooksOf(sql, a);
  let w = (await hooks.get(hookA.id))!;
  t.match({ total: Number(w.total_deliveries), failed: Number(w.failed_deliveries), attempts: Number(w.total_attempts), failedAttempts: Number(w.failed_attempts) },
    { total: 2, failed: 1, attempts: 3, failedAttempts: 2 }, 'counters: two deliveries ended (one failed), three attempts (two failed)');
  const logs = await sql<Array<{ body: { delivery_id: string; success: boolean; attempt: number } }>>`
    select body from log_records where tenant_id in (${a}, ${b}) and log_type = 'webhook_delivery'`;
  t.same(logs.map((l) => [l.body.delivery_id, l.body.success]).sort(), [[ok, true], [retry, false], [fail, false]].sort(), 'a log record per recorded attempt, none for the others');

  // The retry's second attempt, in a later batch, ends the delivery; counters follow.
  t.same(await store.record([rec(a, hookA.id, retry, { attempt: 2 })]), [true]);
  w = (await hooks.get(hookA.id))!;
  t.match({ total: Number(w.total_deliveries), failed: Number(w.failed_deliveries), attempts: Number(w.total_attempts) }, { total: 3, failed: 1, attempts: 4 });
});

t.test('deliveries made in batches by the worker: each delivery has one attempt, with the status its receiver answered', async (t) => {
  const tenant = await createTenant(sql, 'batch-e2e');
  // Odd-numbered users' receivers fail: the delivery's outcome must follow its own answer, not its batch's.
  const rx = await startReceiver((r) => (Number(JSON.parse(r.body).data.user_id.slice(1)) % 2 ? { status: 503 } : { status: 200 }));
  t.teardown(() => rx.close());
  const hook = await addWebhook(sql, config, tenant, { url: rx.url, events: ['auth.login'], retry_policy: { max_retries: 0, retry_interval: 1 } });
  // The suite shares one database, so another file's worker may fan these events out and queue them
  // under its own queue names, or hold them under a lease, before it stops or is killed: the overdue
  // check finds such deliveries (not in this worker's queue) after 3 s instead of 2 min, and an ended
  // lease is released after 1 s; in production every worker shares one queue.
  const worker = await startWebhookWorker(config, createLogger('silent'), { relay: { pollMs: 100, overdueEveryMs: 1000, overdueGraceMs: 3000, claimGraceMs: 1000 } });
  t.teardown(() => worker.close());
  await sql.begin((tx) => recordEvents(tx, Array.from({ length: 60 }, (_, i) => ({ tenantId: tenant, event: 'auth.login' as const, data: { user_id: `u${i}` } }))));
  await waitFor(async () => (await sql`select 1 from webhook_deliveries where tenant_id = ${tenant} and status = 'pending'`).length === 0
    && (await sql`select 1 from webhook_deliveries where tenant_id = ${tenant}`).length === 60, 60_000);
  const got = await sql<Array<{ user: string; status: string; attempts: number; attempt_status: string; response_status: number }>>`
    select d.request_body->'data'->>'user_id' as user, d.status, count(a.*)::int as attempts, min(a.status) as attempt_status, min(a.response_status) as response_status
    from webhook_deliveries d left join webhook_delivery_attempts a on a.tenant_id = d.tenant_id and a.delivery_id = d.id
    where d.tenant_id = ${tenant} group by d.tenant_id, d.id`;
  t.equal(got.length, 60);
  for (const g of got) {
    const odd = Number(g.user.slice(1)) % 2 === 1;
    t.same([g.status, g.attempts, g.attempt_status, g.response_status], odd ? ['failed', 1, 'failed', 503] : ['success', 1, 'success', 200], `${g.user}`);
  }
  const w = (await hooksOf(sql, tenant).get(hook.id))!;
  t.same([Number(w.total_deliveries), Number(w.failed_deliveries), Number(w.total_attempts)], [60, 30, 60]);
  t.equal(rx.received.length, 60, 'each sent once');
});

t.test('a worker killed with a batch of attempts sent but not yet recorded: nothing is lost; they are sent again and recorded once', async (t) => {
  const tenant = await createTenant(sql, 'batch-crash');
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const hook = await addWebhook(sql, config, tenant, { url: rx.url, events: ['user.created'] });
  // Every counter shard of the webhook exists and is held by this test, so the worker's batch record,
  // which adds to one of them, waits at that row: the requests have gone out, nothing is recorded.
  for (let s = 0; s < STATS_SHARDS; s++) await sql`insert into webhook_stats (tenant_id, webhook_id, shard) values (${tenant}, ${hook.id}, ${s})`;
  let release!: () => void;
  const released = new Promise<void>((r) => { release = r; });
  let locked!: () => void;
  const holding = new Promise<void>((r) => { locked = r; });
  const holder = sql.begin(async (tx) => {
    await tx`select 1 from webhook_stats where tenant_id = ${tenant} and webhook_id = ${hook.id} for update`;
    locked();
    await released;
  });
  await holding;
  const env = { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'silent', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CONCURRENCY: '32', REDIS_PREFIX: config.redisPrefix, DATABASE_URL: config.databaseUrl, REDIS_URL: config.redisUrl };
  const first = await forkReady(workerFile, env, children);
  const n = 12;
  await sql.begin((tx) => recordEvents(tx, Array.from({ length: n }, (_, i) => ({ tenantId: tenant, event: 'user.created' as const, data: { user_id: `c${i}` } }))));
  await waitFor(() => rx.received.length === n, 20_000);
  // The worker's record is waiting for the lock (the only statement of this database that can): its batch is in flight.
  const waiting = () => sql`select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
  await waitFor(async () => (await waiting()).length > 0, 20_000);
  await new Promise<void>((resolve) => { first.once('exit', () => resolve()); first.kill('SIGKILL'); });
  // Its connection goes with it (Postgres would notice only when it next wrote to the socket).
  for (const w of await waiting()) await sql`select pg_terminate_backend(${w.pid}::int)`;
  release();
  await holder;
  t.equal((await sql`select 1 from webhook_delivery_attempts where tenant_id = ${tenant}`).length, 0, 'the killed batch recorded nothing');

  await forkReady(workerFile, env, children);
  // The killed worker's jobs are found stalled once their locks lapse, and run again.
  await waitFor(async () => (await sql`select 1 from webhook_deliveries where tenant_id = ${tenant} and status = 'success'`).length === n, 90_000, 200);
  const ids = new Set(rx.received.map((r) => JSON.parse(r.body).data.user_id as string));
  t.equal(ids.size, n, 'every event reached the receiver');
  const perDelivery = new Map<string, Set<string>>();
  for (const r of rx.received) {
    const id = r.headers['x-svc-delivery'] as string;
    perDelivery.set(id, (perDelivery.get(id) ?? new Set()).add(JSON.parse(r.body).data.user_id));
  }
  t.equal(perDelivery.size, n, 'a re-sent event carries its first X-Svc-Delivery, so the receiver can de-duplicate');
  t.equal((await sql`select 1 from webhook_delivery_attempts where tenant_id = ${tenant}`).length, n, 'one attempt recorded per delivery');
  const w = (await hooksOf(sql, tenant).get(hook.id))!;
  t.same([Number(w.total_deliveries), Number(w.failed_deliveries), Number(w.total_attempts)], [n, 0, n]);
});

t.test('a worker killed mid-way through a batch job: the attempts it recorded are not sent again, the others are sent again and recorded once', async (t) => {
  // The only consumer is this test's: workers of earlier tests are stopped first.
  for (const c of children) if (c.exitCode === null && c.signalCode === null) await new Promise<void>((resolve) => { c.once('exit', () => resolve()); c.kill('SIGKILL'); });
  const tenant = await createTenant(sql, 'batch-job-crash');
  // Two webhooks of one tenant: A answers at once, B holds its requests until the first worker is gone.
  const rxA = await startReceiver();
  let hang = true;
  const rxB = await startReceiver(() => (hang ? { hang: true } : {}));
  t.teardown(async () => { await rxA.close(); await rxB.close(); });
  await addWebhook(sql, config, tenant, { url: rxA.url, events: ['user.created'] });
  await addWebhook(sql, config, tenant, { url: rxB.url, events: ['user.created'] });
  // The queue path of fresh deliveries (the worker's in-process handoff off): one batch job per tenant.
  const env = { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'silent', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_FRESH_HANDOFF: 'false', WEBHOOK_CONCURRENCY: '32', REDIS_PREFIX: config.redisPrefix, DATABASE_URL: config.databaseUrl, REDIS_URL: config.redisUrl };
  const jobQueues = new JobQueues(config);
  t.teardown(() => jobQueues.close());
  const queue = await jobQueues.queue('webhooks');
  const first = await forkReady(workerFile, env, children);
  const n = 6;
  await sql.begin((tx) => recordEvents(tx, Array.from({ length: n }, (_, i) => ({ tenantId: tenant, event: 'user.created' as const, data: { user_id: `k${i}` } }))));
  const succeeded = async () => (await sql`select 1 from webhook_deliveries where tenant_id = ${tenant} and status = 'success'`).length;
  await waitFor(async () => rxB.received.length === n && (await succeeded()) === n, 20_000);
  // The tenant's 2n due attempts went out as one job, still running (B's requests are unanswered).
  const active = (await queue.getActive()).filter((j) => j.data.tenantId === tenant);
  t.equal(active.length, 1, 'one job');
  t.equal(active[0]!.data.items?.length, 2 * n, 'holding every attempt');
  await new Promise<void>((resolve) => { first.once('exit', () => resolve()); first.kill('SIGKILL'); });
  hang = false;

  await forkReady(workerFile, env, children);
  // The job is found stalled once its lock lapses, and runs again: A's attempts are recorded (stale), B's are not.
  await waitFor(async () => (await succeeded()) === 2 * n, 90_000, 200);
  t.equal(rxA.received.length, n, 'the recorded attempts are not sent again');
  t.equal(rxB.received.length, 2 * n, 'the unrecorded ones are sent again');
  t.equal(new Set(rxB.received.map((r) => r.headers['x-svc-delivery'])).size, n, 'with their X-Svc-Delivery, so the receiver can de-duplicate');
  const attempts = await sql<Array<{ attempt: number; status: string; error: string | null }>>`select attempt, status, error from webhook_delivery_attempts where tenant_id = ${tenant}`;
  t.same(attempts.map((a) => [a.attempt, a.status, a.error]), Array.from({ length: 2 * n }, () => [1, 'success', null]), 'one attempt recorded per delivery, its first');
});
