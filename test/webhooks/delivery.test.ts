import t from 'tap';
import { createHmac } from 'node:crypto';
import { createLogger } from '../../src/log.js';
import { startWebhookWorker } from '../../workers/webhook-worker.js';
import { testConfig } from '../helpers/env.js';
import { waitFor } from '../helpers/processes.js';
import { addWebhook, createTenant, emit, hooksOf, isolatedDatabase, startReceiver, testSql } from './fixtures.js';

// Delivery end to end: events committed to the outbox reach real loopback receivers through the relay
// and the BullMQ worker running in this process, against the shared test Postgres and Redis.
const db = await isolatedDatabase();
const config = testConfig({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CONCURRENCY: '8', DATABASE_URL: db.url });
const sql = testSql(config);
const worker = await startWebhookWorker(config, createLogger('silent'), { relay: { pollMs: 100 } });
const tenant = await createTenant(sql);
const hooks = hooksOf(sql, tenant);
t.teardown(async () => { await worker.close(); await sql.end({ timeout: 2 }); await db.drop(); });

const SECRET = 'whsec_independent_check_secret_1';

t.test('an event reaches a subscribed webhook with a verifiable signature, body and custom headers', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const hook = await addWebhook(sql, config, tenant, { url: `${rx.url}/hook`, secret: SECRET, events: ['user.created', 'user.deleted'], headers: { 'X-Custom': 'yes', 'X-Svc-Event': 'spoofed' } });
  const before = Math.floor(Date.now() / 1000);
  await emit(sql, { tenantId: tenant, event: 'user.created', data: { user_id: 'u1' } });
  await waitFor(() => rx.received.length === 1);
  const r = rx.received[0]!;
  t.equal(r.headers['content-type'], 'application/json');
  t.equal(r.headers['x-svc-event'], 'user.created', 'custom headers cannot override ours');
  t.equal(r.headers['x-custom'], 'yes');
  t.match(r.headers['x-svc-delivery'], /^whd_/);
  const ts = Number(r.headers['x-svc-timestamp']);
  t.ok(ts >= before - 1 && ts <= Math.floor(Date.now() / 1000) + 1, 'timestamp is epoch seconds, now');
  const expected = 'sha256=' + createHmac('sha256', SECRET).update(`${r.headers['x-svc-timestamp']}.${r.body}`).digest('hex');
  t.equal(r.headers['x-svc-signature'], expected, 'signature recomputed independently');
  const body = JSON.parse(r.body);
  t.same(Object.keys(body), ['event', 'timestamp', 'data']);
  t.equal(body.event, 'user.created');
  t.match(body.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.same(body.data, { user_id: 'u1' });
  await waitFor(async () => (await hooks.deliveries(hook.id, { limit: 10 }))[0]?.status === 'success');
  const rows = await hooks.deliveries(hook.id, { limit: 10 });
  t.equal(rows[0]!.id, r.headers['x-svc-delivery']);
  t.equal(rows[0]!.response_status, 200);
  t.equal(rows[0]!.attempt, 1);
  const w = (await hooks.get(hook.id))!;
  t.equal(Number(w.total_deliveries), 1);
  t.equal(Number(w.failed_deliveries), 0);
  t.ok(w.last_success_at && w.last_triggered_at);
  // An event the webhook did not subscribe to is not delivered.
  await emit(sql, { tenantId: tenant, event: 'auth.login', data: { user_id: 'u1' } });
  await emit(sql, { tenantId: tenant, event: 'user.deleted', data: { user_id: 'u2' } });
  await waitFor(() => rx.received.length === 2);
  t.equal(JSON.parse(rx.received[1]!.body).event, 'user.deleted');
});

t.test('filters: a roles condition selects role events; inactive webhooks get nothing', async (t) => {
  const rx = await startReceiver();
  const off = await startReceiver();
  t.teardown(async () => { await rx.close(); await off.close(); });
  await addWebhook(sql, config, tenant, { url: rx.url, events: ['role.assigned'], filters: { 'role.assigned': { roles: ['admin', 'auditor'] } } });
  const inactive = await addWebhook(sql, config, tenant, { url: off.url, events: ['role.assigned'] });
  await hooks.update(inactive.id, { status: 'inactive' });
  await emit(sql, { tenantId: tenant, event: 'role.assigned', data: { user_id: 'u1', role: 'viewer' } });
  await emit(sql, { tenantId: tenant, event: 'role.assigned', data: { user_id: 'u2', role: 'admin' } });
  await emit(sql, { tenantId: tenant, event: 'role.assigned', data: { user_id: 'u3', roles: ['x', 'auditor'] } });
  await waitFor(() => rx.received.length === 2);
  await new Promise((r) => setTimeout(r, 300));
  t.same(rx.received.map((r) => JSON.parse(r.body).data.user_id).sort(), ['u2', 'u3']);
  t.equal(off.received.length, 0, 'the inactive webhook received nothing');
});

t.test('other tenants\' events never reach this tenant\'s webhooks', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const other = await createTenant(sql, 'wh-other');
  await addWebhook(sql, config, tenant, { url: rx.url, events: ['policy.created'] });
  await emit(sql, { tenantId: other, event: 'policy.created', data: { policy_id: 'p-other' } });
  await emit(sql, { tenantId: tenant, event: 'policy.created', data: { policy_id: 'p-mine' } });
  await waitFor(() => rx.received.length >= 1);
  await new Promise((r) => setTimeout(r, 300));
  t.same(rx.received.map((r) => JSON.parse(r.body).data.policy_id), ['p-mine']);
});

t.test('500 then 200: a failed attempt, then success on the automatic retry with the same delivery id', async (t) => {
  const rx = await startReceiver((_r, n) => (n === 1 ? { status: 500, body: 'boom' } : { status: 200 }));
  t.teardown(() => rx.close());
  const hook = await addWebhook(sql, config, tenant, { url: rx.url, events: ['user.suspended'], retry_policy: { max_retries: 3, retry_interval: 1 } });
  await emit(sql, { tenantId: tenant, event: 'user.suspended', data: { user_id: 'u9' } });
  await waitFor(() => rx.received.length === 2, 15_000);
  t.equal(rx.received[0]!.headers['x-svc-delivery'], rx.received[1]!.headers['x-svc-delivery'], 'same X-Svc-Delivery across attempts');
  t.equal(rx.received[0]!.body, rx.received[1]!.body, 'same body across attempts');
  await waitFor(async () => (await hooks.deliveries(hook.id, { limit: 5 }))[0]?.status === 'success');
  const id = rx.received[0]!.headers['x-svc-delivery'] as string;
  const d = (await hooks.delivery(hook.id, id))!;
  t.equal(d.delivery.attempt, 2);
  t.same(d.attempts.map((a) => [a.attempt, a.status, a.response_status]), [[1, 'failed', 500], [2, 'success', 200]]);
  const w = (await hooks.get(hook.id))!;
  // Issue 21 item 5: one delivery that succeeded on its second try; attempts are counted apart.
  t.equal(Number(w.total_deliveries), 1);
  t.equal(Number(w.failed_deliveries), 0);
  t.equal(Number(w.total_attempts), 2);
  t.equal(Number(w.failed_attempts), 1);
  t.ok(w.last_failure_at && w.last_success_at);
});

t.test('timeout and redirect are failures; retries stop at max_retries; a manual retry sends once more', async (t) => {
  let mode: 'hang' | 'redirect' | 'ok' = 'hang';
  const rx = await startReceiver(() => (mode === 'hang' ? { hang: true } : mode === 'redirect' ? { status: 302, headers: { location: 'http://example.com/' } } : { status: 204 }));
  t.teardown(() => rx.close());
  const hook = await addWebhook(sql, config, tenant, { url: rx.url, events: ['auth.logout'], timeout: 1, retry_policy: { max_retries: 1, retry_interval: 1 } });
  await emit(sql, { tenantId: tenant, event: 'auth.logout', data: { user_id: 'u1' } });
  await waitFor(() => rx.received.length === 1, 10_000);
  mode = 'redirect';
  await waitFor(async () => (await hooks.deliveries(hook.id, { limit: 5 }))[0]?.status === 'failed', 15_000);
  const row = (await hooks.deliveries(hook.id, { limit: 5 }))[0]!;
  const d = (await hooks.delivery(hook.id, row.id))!;
  t.same(d.attempts.map((a) => a.status), ['failed', 'failed']);
  t.match(d.attempts[0]!.error, /timeout/);
  t.equal(d.attempts[1]!.response_status, 302);
  t.match(d.attempts[1]!.error, /redirect/);
  t.equal(rx.received.length, 2, 'max_retries 1: two attempts in all');
  mode = 'ok';
  const retried = await hooks.retryDelivery(hook.id, row.id, Date.now());
  t.match(retried, { status: 'pending', attempt: 3 });
  t.equal(await hooks.retryDelivery(hook.id, row.id, Date.now()), 'not_failed');
  await waitFor(() => rx.received.length === 3, 10_000);
  await waitFor(async () => (await hooks.delivery(hook.id, row.id))!.delivery.status === 'success');
  t.equal(rx.received[2]!.headers['x-svc-delivery'], row.id);
});

t.test('concurrent deliveries keep the webhook counters exact', async (t) => {
  const rx = await startReceiver((_r, n) => (n % 4 === 0 ? { status: 500 } : { status: 200 }));
  t.teardown(() => rx.close());
  const hook = await addWebhook(sql, config, tenant, { url: rx.url, events: ['auth.login'], retry_policy: { max_retries: 0, retry_interval: 1 } });
  await sql.begin(async (tx) => {
    const { recordEvent } = await import('../../src/events/outbox.js');
    for (let i = 0; i < 40; i++) await recordEvent(tx, { tenantId: tenant, event: 'auth.login', data: { user_id: `u${i}` } });
  });
  await waitFor(async () => Number((await hooks.get(hook.id))!.total_deliveries) === 40, 20_000);
  const w = (await hooks.get(hook.id))!;
  t.equal(Number(w.failed_deliveries), 10);
  t.equal(rx.received.length, 40);
});
