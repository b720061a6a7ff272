import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { createLogger } from '../../src/log.js';
import { startWebhookWorker } from '../../workers/webhook-worker.js';
import { runGovernance } from '../../src/logging/governance-job.js';
import { createRedis, closeRedis } from '../../src/store/redis.js';
import { adminOf, api } from '../admin/helpers.js';
import { waitFor } from '../helpers/processes.js';
import { adminToken, postForm, setupTenant } from '../helpers/tokens.js';
import { logEnv } from './fixtures.js';

// Usage metering and quota enforcement over real traffic: token decisions (token logging on) and admin
// mutations are counted in Redis minute counters, rolled up into the windows the usage-aggregates
// endpoint answers, and match what was archived; a quota policy crosses warning then its hard limit:
// evaluations, the outbox notification (logging.quota_exceeded) and dropped bulk records show it, while
// critical (admin_audit) records are still archived. Bad bodies 422; the tenant rule 403.
const env = await logEnv({ WEBHOOK_ALLOW_PRIVATE: 'true' });
const { srv, sql } = env;
const redis = createRedis(srv.config, 'cache');
t.teardown(() => closeRedis(redis));
const tenant = async (label: string) => {
  const boot = await setupTenant(srv, label);
  const call = api(srv, await adminToken(srv, { tenantId: boot.tenant_id, permissions: ['admin:*'] }));
  return { tenantId: boot.tenant_id, boot, call };
};
const A = await tenant('gov-a');
const C = await tenant('gov-c');
const B = await adminOf(srv, ['admin:*'], 'gov-b');
const P = await adminOf(srv, ['admin:*'], 'gov-p', true);
await env.worker();
// A webhook receiver of tenant C's notifications, through the real relay and webhook worker.
const hooked: Array<{ event: string; body: any }> = [];
const receiver = http.createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', () => { hooked.push({ event: String(req.headers['x-svc-event']), body: JSON.parse(Buffer.concat(parts).toString('utf8')) }); res.end('ok'); });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const webhooks = await startWebhookWorker(srv.config, createLogger('silent'), { relay: { pollMs: 100 } });
t.teardown(async () => { await webhooks.close(); receiver.close(); });
const gov = srv.deps.logGovernance!;

/** Flushes this process's meter and runs a governance pass (rollup + evaluation) now. */
const pass = async () => { await gov.flush(); return runGovernance(sql, redis, srv.config, Date.now()); };
const issue = async (x: typeof A, n: number) => {
  for (let i = 0; i < n; i++) t.equal((await postForm(`${srv.url}/token`, x.boot.clients.exchanger, { grant_type: 'client_credentials' })).status, 200);
};
const usage = async (x: typeof A, q: string) => (await x.call('GET', `/api/admin/logging-policies/usage-aggregates?limit=500&${q}`)).body.items as any[];
const sum = (items: any[], f: (i: any) => boolean) => items.filter(f).reduce((s, i) => s + i.value, 0);

t.test('aggregates match the records sent through real traffic', async (t) => {
  t.equal((await A.call('PUT', '/api/admin/logging-policies/settings', { token_decision_logging: true })).status, 200);
  await issue(A, 7);
  for (let i = 0; i < 3; i++) t.equal((await A.call('POST', '/api/admin/logging-policies/quotas', { metric_name: 'bytes', window_kind: 'month', hard_limit: 1e12, enforcement_mode: 'observe', name: `p${i}` })).status, 201);
  // Everything archived, and every process's counts rolled up.
  let chunks: any[] = [];
  await waitFor(async () => {
    chunks = await sql<any[]>`select log_type, record_count, plain_bytes from log_chunks where tenant_id = ${A.tenantId} and status = 'committed'`;
    const waiting = Number((await sql`select count(*)::int as n from log_records where tenant_id = ${A.tenantId}`)[0]!.n);
    if (waiting || !chunks.some((c) => c.log_type === 'token') || !chunks.some((c) => c.log_type === 'admin_audit')) return false;
    await pass();
    const mins = await usage(A, 'window_kind=minute&metric_name=records');
    return ['token', 'admin_audit'].every((lt) => sum(mins, (i) => i.log_type === lt) === chunks.filter((c) => c.log_type === lt).reduce((s, c) => s + c.record_count, 0))
      && sum(await usage(A, 'window_kind=minute&metric_name=chunks'), () => true) === chunks.length;
  }, 20_000, 100);
  const tokenRecords = chunks.filter((c) => c.log_type === 'token').reduce((s, c) => s + c.record_count, 0);
  t.equal(tokenRecords, 7, 'one bulk record per token decision');
  const audits = chunks.filter((c) => c.log_type === 'admin_audit').reduce((s, c) => s + c.record_count, 0);
  t.equal(audits, 4, 'one critical record per admin mutation (settings + 3 policies)');
  for (const kind of ['hour', 'day', 'month']) {
    const items = await usage(A, `window_kind=${kind}&metric_name=records`);
    t.equal(sum(items, (i) => i.log_type === 'token' && i.lane === 'bulk'), sum(await usage(A, 'window_kind=minute&metric_name=records'), (i) => i.log_type === 'token'), `${kind} window = sum of its minutes`);
  }
  const [item] = await usage(A, 'window_kind=day&metric_name=records');
  t.match(item, { tenant_id: A.tenantId, tenant_key: null, window_kind: 'day', source_table: 'log_usage_aggregates', final: false });
  t.equal(item.window_start_at % 86_400_000, 0, 'UTC day boundary');
  t.same(JSON.parse(item.metadata_json), { final: false, source: 'redis_minute_counters' });
  t.ok(sum(await usage(A, 'window_kind=minute&metric_name=bytes'), (i) => i.log_type === 'token') > 0, 'bytes are metered');
  // since/until bound window_start_at; a second pass changes nothing (idempotent).
  const day = item.window_start_at;
  t.same(await usage(A, `window_kind=day&since=${day + 1}`), []);
  t.equal((await usage(A, `window_kind=day&until=${day}&since=${day}`)).length > 0, true);
  const before = await usage(A, 'window_kind=hour');
  await pass();
  t.same((await usage(A, 'window_kind=hour')).map((i) => [i.id, i.value]), before.map((i) => [i.id, i.value]), 'rollup run twice writes the same');
});

t.test("the default list answers the spec's windows (hour, day, month) with created_at, refreshed_at and updated_at; minute windows only when asked", async (t) => {
  const all = await usage(A, 'metric_name=records');
  t.same([...new Set(all.map((i) => i.window_kind))].sort(), ['day', 'hour', 'month'], 'no minute window in the default answer');
  for (const i of all) {
    t.ok(Number.isInteger(i.created_at) && Number.isInteger(i.refreshed_at) && Number.isInteger(i.updated_at), 'int64 epoch ms');
    t.ok(i.created_at <= i.updated_at && i.updated_at <= i.refreshed_at, 'created, then updated, then refreshed');
  }
  const minutes = await usage(A, 'window_kind=minute&metric_name=records');
  t.ok(minutes.length > 0 && minutes.every((i) => i.window_kind === 'minute'), 'minute windows when window_kind=minute names them');
  // A later rollup recomputes a window whose value did not change: refreshed_at moves, updated_at and created_at stay.
  const hour = (await usage(A, 'window_kind=hour&metric_name=records')).find((i) => i.log_type === 'token')!;
  let again: any;
  await waitFor(async () => {
    await pass();
    again = (await usage(A, 'window_kind=hour&metric_name=records')).find((i) => i.id === hour.id);
    return again.refreshed_at > hour.refreshed_at;
  }, 10_000, 50);
  t.match(again, { value: hour.value, created_at: hour.created_at, updated_at: hour.updated_at });
});

t.test('a quota policy crosses warning, then its hard limit: evaluations, notification, dropped bulk records; critical records still archived', async (t) => {
  t.equal((await C.call('PUT', '/api/admin/logging-policies/settings', { token_decision_logging: true })).status, 200);
  const hook = await C.call('POST', '/api/admin/webhooks', { name: 'quota', url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, events: ['logging.quota_exceeded'] });
  t.equal(hook.status, 201, 'webhooks may subscribe to the extension event');
  const res = await C.call('POST', '/api/admin/logging-policies/quotas', { name: 'bulk', lane: 'bulk', metric_name: 'records', window_kind: 'day', soft_limit: 8, hard_limit: 10, warning_ratio: 0.5, enforcement_mode: 'block_non_critical' });
  t.equal(res.status, 201, JSON.stringify(res.body));
  const policy = res.body;
  t.match(policy, { scope: 'tenant', warning_ratio: 0.5, enforcement_mode: 'block_non_critical', active: true });
  const [audit] = await sql<any[]>`select * from admin_audit_log where tenant_id = ${C.tenantId} and action = 'log_quota_policy.create'`;
  t.ok(audit, 'audited');
  const latest = async () => (await sql<any[]>`select * from log_quota_evaluations where tenant_id = ${C.tenantId} and quota_policy_id = ${policy.id} order by evaluated_at desc, id desc limit 1`)[0];

  await issue(C, 5);
  await waitFor(async () => { await pass(); return (await latest())?.state === 'warning'; }, 10_000, 50);
  const warn = await latest();
  t.match(warn, { state: 'warning', enforcement_action: 'notify', value: '5' });
  t.type(warn.notification_event_id, 'string');
  const [ev] = await sql<any[]>`select * from event_outbox where id = ${warn.notification_event_id}`;
  t.match(ev, { tenant_id: C.tenantId, event: 'logging.quota_exceeded', data: { quota_policy_id: policy.id, state: 'warning', value: 5, hard_limit: 10 } });
  t.ok(gov.admission.admit(C.tenantId, 'token', 'data', 'bulk'), 'a warning does not drop records');

  await issue(C, 6);
  await waitFor(async () => { await pass(); return (await latest())?.state === 'hard_exceeded'; }, 10_000, 50);
  const hard = await latest();
  t.match(hard, { state: 'hard_exceeded', enforcement_action: 'block_non_critical', value: '11' });
  t.not(hard.notification_event_id, warn.notification_event_id, 'a new state, a new notification');
  await pass();
  t.equal((await latest()).notification_event_id, hard.notification_event_id, 'once per policy, window and state');
  t.equal(Number((await sql`select count(*)::int as n from event_outbox where tenant_id = ${C.tenantId} and event = 'logging.quota_exceeded'`)[0]!.n), 2);

  await waitFor(() => hooked.length >= 2, 15_000, 50);
  t.same(hooked.map((h) => [h.event, h.body.event, h.body.data.state]), [['logging.quota_exceeded', 'logging.quota_exceeded', 'warning'], ['logging.quota_exceeded', 'logging.quota_exceeded', 'hard_exceeded']], 'delivered to the subscribed webhook');

  // The pub/sub notice (or the periodic refresh) reaches the HTTP process's admission.
  await waitFor(() => !gov.admission.admit(C.tenantId, 'token', 'data', 'bulk'), 10_000, 20);
  t.ok(gov.admission.admit(C.tenantId, 'admin_audit', 'control', 'critical'), 'critical never dropped');
  t.ok(gov.admission.admit(A.tenantId, 'token', 'data', 'bulk'), 'other tenants unaffected');
  await issue(C, 3);
  // A critical record (admin mutation) under the block: still archived.
  t.equal((await C.call('PATCH', `/api/admin/logging-policies/quotas/${policy.id}`, { name: 'bulk (blocked)' })).status, 200);
  await waitFor(async () => {
    await pass();
    const items = await usage(C, 'window_kind=day');
    return sum(items, (i) => i.metric_name === 'dropped_records' && i.lane === 'bulk') === 3;
  }, 10_000, 50);
  const day = await usage(C, 'window_kind=day');
  t.equal(sum(day, (i) => i.metric_name === 'records' && i.lane === 'bulk'), 11, 'dropped records are not counted as records');
  await waitFor(async () => {
    const rows = await sql<any[]>`select count(*)::int as n from log_chunks where tenant_id = ${C.tenantId} and status = 'committed' and log_type = 'admin_audit'`;
    const waiting = await sql<any[]>`select count(*)::int as n from log_records where tenant_id = ${C.tenantId}`;
    return rows[0].n > 0 && waiting[0].n === 0;
  }, 20_000, 100);
  const tokenArchived = await sql<any[]>`select coalesce(sum(record_count), 0)::int as n from log_chunks where tenant_id = ${C.tenantId} and log_type = 'token'`;
  t.equal(tokenArchived[0].n, 11, 'the blocked bulk records were never archived');
  const audits = await sql<any[]>`select coalesce(sum(record_count), 0)::int as n from log_chunks where tenant_id = ${C.tenantId} and log_type = 'admin_audit' and status = 'committed'`;
  t.equal(audits[0].n, 4, 'every admin mutation archived (settings, webhook, policy create, update under the block)');

  const list = (await C.call('GET', '/api/admin/logging-policies/quota-evaluations?limit=500')).body;
  t.ok(list.total >= 3);
  t.equal(list.items.length, list.total);
  t.match(list.page, { number: 1, size: 500, has_more: false });
  const item = list.items.find((i: any) => i.state === 'hard_exceeded');
  t.same(Object.keys(item).sort(), ['enforcement_action', 'evaluated_at', 'hard_limit', 'id', 'lane', 'log_type', 'metadata_json', 'metric_name', 'notification_event_id',
    'plane', 'quota_policy_id', 'soft_limit', 'state', 'tenant_id', 'tenant_key', 'value', 'window_end_at', 'window_kind', 'window_start_at'].sort());
  t.match(item, { quota_policy_id: policy.id, tenant_id: C.tenantId, lane: 'bulk', metric_name: 'records', window_kind: 'day', soft_limit: 8, hard_limit: 10, value: 11 });
  t.match(JSON.parse(item.metadata_json), { enforcement_mode: 'block_non_critical', warning_ratio: 0.5 });
  const warnings = (await C.call('GET', '/api/admin/logging-policies/quota-evaluations?state=warning')).body;
  t.ok(warnings.items.length >= 1 && warnings.items.every((i: any) => i.state === 'warning'));
  t.equal(warnings.total, warnings.items.length);

  // Deactivating the policy lifts the block at the next evaluation.
  t.equal((await C.call('PATCH', `/api/admin/logging-policies/quotas/${policy.id}`, { active: false })).status, 200);
  await waitFor(async () => { await gov.refresh(); return gov.admission.admit(C.tenantId, 'token', 'data', 'bulk'); }, 10_000, 50);
  t.equal((await C.call('DELETE', `/api/admin/logging-policies/quotas/${policy.id}`)).status, 204);
  t.equal((await C.call('GET', `/api/admin/logging-policies/quotas/${policy.id}`)).status, 404);
});

t.test('throttle_non_critical admits one record in ten once the soft limit is exceeded', async (t) => {
  const res = await A.call('POST', '/api/admin/logging-policies/quotas', { lane: 'bulk', metric_name: 'records', window_kind: 'day', soft_limit: 1, hard_limit: 1_000_000, enforcement_mode: 'throttle_non_critical' });
  t.equal(res.status, 201);
  await waitFor(async () => { await pass(); return !gov.admission.admit(A.tenantId, 'token', 'data', 'bulk') || !gov.admission.admit(A.tenantId, 'token', 'data', 'bulk'); }, 10_000, 50);
  const [e] = await sql<any[]>`select * from log_quota_evaluations where tenant_id = ${A.tenantId} and quota_policy_id = ${res.body.id} order by evaluated_at desc limit 1`;
  t.match(e, { state: 'soft_exceeded', enforcement_action: 'throttle_non_critical' });
  const admitted = Array.from({ length: 100 }, () => gov.admission.admit(A.tenantId, 'token', 'data', 'bulk')).filter(Boolean).length;
  t.equal(admitted, 10, 'one in ten');
  t.ok(gov.admission.admit(A.tenantId, 'auth', 'data', 'default'), 'the policy names the bulk lane only');
  t.equal((await A.call('DELETE', `/api/admin/logging-policies/quotas/${res.body.id}`)).status, 204);
  await waitFor(async () => { await gov.refresh(); return Array.from({ length: 3 }, () => gov.admission.admit(A.tenantId, 'token', 'data', 'bulk')).every(Boolean); }, 10_000, 50);
});

t.test('bad bodies and queries are 422', async (t) => {
  const ok = { metric_name: 'records', window_kind: 'day', hard_limit: 10, enforcement_mode: 'notify' };
  for (const body of [{ ...ok, surprise: 1 }, { ...ok, hard_limit: undefined }, { ...ok, enforcement_mode: 'panic' }, { ...ok, window_kind: 'week' },
    { ...ok, metric_name: 'lines' }, { ...ok, warning_ratio: 1.5 }, { ...ok, soft_limit: 20 }, { ...ok, lane: 'fast' }]) {
    const res = await A.call('POST', '/api/admin/logging-policies/quotas', JSON.parse(JSON.stringify(body)));
    t.equal(res.status, 422, JSON.stringify(body));
    t.equal(res.body.error, 'validation_error');
  }
  t.equal((await A.call('PATCH', '/api/admin/logging-policies/quotas/lqp_nope', { name: 'x' })).status, 404);
  t.equal((await A.call('PATCH', '/api/admin/logging-policies/quotas/lqp_nope', {})).status, 422);
  for (const q of ['window_kind=week', 'limit=0', 'limit=501', 'since=abc']) t.equal((await A.call('GET', `/api/admin/logging-policies/usage-aggregates?${q}`)).status, 422, q);
  for (const q of ['limit=0', 'limit=501', 'page=0']) t.equal((await A.call('GET', `/api/admin/logging-policies/quota-evaluations?${q}`)).status, 422, q);
});

t.test('tenant rule: another tenant is 403 unless platform', async (t) => {
  for (const path of ['usage-aggregates', 'quota-evaluations']) {
    for (const q of [`tenant_id=${A.tenantId}`, `filter[tenant_id]=${encodeURIComponent(A.tenantId)}`]) {
      const res = await B.call('GET', `/api/admin/logging-policies/${path}?${q}`);
      t.equal(res.status, 403, `${path} ${q}`);
      t.equal(res.body.error, 'forbidden');
    }
    t.equal((await B.call('GET', `/api/admin/logging-policies/${path}?tenant_id=${B.tenantId}`)).status, 200, 'own tenant by name');
  }
  const pa = (await P.call('GET', `/api/admin/logging-policies/usage-aggregates?tenant_id=${A.tenantId}&window_kind=day`)).body;
  t.ok(pa.items.length > 0 && pa.items.every((i: any) => i.tenant_id === A.tenantId), 'platform admins may name any tenant');
  const pc = (await P.call('GET', `/api/admin/logging-policies/quota-evaluations?filter[tenant_id]=${encodeURIComponent(C.tenantId)}`)).body;
  t.ok(pc.total >= 3);
  const res = await B.call('POST', '/api/admin/logging-policies/quotas', { scope: 'platform', metric_name: 'records', window_kind: 'day', hard_limit: 10, enforcement_mode: 'notify' });
  t.equal(res.status, 403);
  t.equal((await B.call('GET', `/api/admin/logging-policies/quotas`)).body.items.length, 0, 'B does not see A\'s policies');
});
