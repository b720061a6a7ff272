import t from 'tap';
import { createHmac } from 'node:crypto';
import { createLogger } from '../../src/log.js';
import { startWebhookWorker } from '../../workers/webhook-worker.js';
import { uniqueName } from '../helpers/env.js';
import { j } from '../helpers/http.js';
import { waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { adminToken } from '../helpers/tokens.js';
import { emit, isolatedDatabase, startReceiver } from './fixtures.js';

// The admin interface of webhooks over real HTTP, with the delivery worker running in this process.
const db = await isolatedDatabase();
const srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE: 'true', DATABASE_URL: db.url });
const worker = await startWebhookWorker(srv.config, createLogger('silent'), { relay: { pollMs: 100 } });
t.teardown(async () => { await worker.close(); await srv.close(); await db.drop(); });
const tenant = uniqueName('whadmin');
const write = await adminToken(srv, { tenantId: tenant, permissions: ['admin:webhooks:read', 'admin:webhooks:write'] });
const readOnly = await adminToken(srv, { tenantId: tenant, permissions: ['admin:webhooks:read'] });
const other = await adminToken(srv, { tenantId: uniqueName('whadmin-other'), permissions: ['admin:webhooks:read', 'admin:webhooks:write'] });

function api(path: string, opts: { method?: string; body?: unknown; token?: string; headers?: Record<string, string> } = {}): Promise<Response> {
  return fetch(`${srv.url}/api/admin/webhooks${path}`, {
    method: opts.method ?? 'GET',
    headers: { authorization: `Bearer ${opts.token ?? write}`, ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
}

t.test('create shows a generated secret once; reads never show it', async (t) => {
  let res = await api('', { method: 'POST', body: { name: 'A', url: 'https://example.com/hook', events: ['user.created'] } });
  t.equal(res.status, 201);
  const created = await j(res);
  t.same(Object.keys(created).sort(), ['created_at', 'events', 'id', 'name', 'secret', 'status', 'url']);
  t.match(created, { name: 'A', url: 'https://example.com/hook', events: ['user.created'], status: 'active' });
  t.match(created.secret, /^whsec_/);
  t.ok(Math.abs(created.created_at - Date.now() / 1000) < 60, 'epoch seconds');
  res = await api(`/${created.id}`);
  const full = await j(res);
  t.notOk('secret' in full);
  t.match(full, { id: created.id, timeout: 30, retry_policy: { max_retries: 5, retry_interval: 30 }, headers: {}, filters: {}, success_rate: 100, total_deliveries: 0, failed_deliveries: 0, last_triggered_at: null });
  res = await api('', { method: 'POST', body: { name: 'B', url: 'https://example.com/b', events: ['auth.login'], secret: 'my-own-secret-0123456789' } });
  t.notOk('secret' in (await j(res)), 'a secret the caller chose is not echoed');
  res = await api('');
  t.notMatch(JSON.stringify(await j(res)), /secret/);
});

t.test('validation: 422 with details by field', async (t) => {
  const cases: Array<[unknown, string]> = [
    [{ name: 'x', url: 'ftp://example.com', events: ['user.created'] }, 'url'],
    [{ name: 'x', url: 'https://example.com', events: ['user.exploded'] }, 'events.0'],
    [{ name: 'x', url: 'https://example.com', events: ['user.created'], colour: 'red' }, 'colour'],
    [{ url: 'https://example.com', events: ['user.created'] }, 'name'],
    [{ name: 'x', url: 'https://example.com', events: ['user.created'], headers: { 'X-Svc-Signature': 'x' } }, 'headers.X-Svc-Signature'],
    [{ name: 'x', url: 'https://example.com', events: ['user.created'], filters: { 'role.assigned': { roles: ['a'] } } }, 'filters.role.assigned'],
    [{ name: 'x', url: 'https://example.com', events: ['user.created'], filters: { 'user.created': { colour: ['a'] } } }, 'filters.user.created.colour'],
  ];
  for (const [body, field] of cases) {
    const res = await api('', { method: 'POST', body });
    t.equal(res.status, 422, field);
    const e = await j(res);
    t.equal(e.error, 'validation_error');
    t.ok(e.details && field in e.details, `details name ${field}: ${JSON.stringify(e.details)}`);
  }
});

t.test('authentication, permissions and tenant isolation', async (t) => {
  const created = await j(await api('', { method: 'POST', body: { name: 'iso', url: 'https://example.com/iso', events: ['user.created'] } }));
  let res = await fetch(`${srv.url}/api/admin/webhooks`);
  t.equal(res.status, 401);
  res = await api('', { method: 'POST', token: readOnly, body: { name: 'x', url: 'https://example.com', events: ['user.created'] } });
  t.equal(res.status, 403);
  t.equal((await j(res)).error, 'forbidden');
  res = await api(`/${created.id}`, { token: other });
  t.equal(res.status, 404, 'another tenant cannot see it');
  res = await api(`/${created.id}`, { method: 'DELETE', token: other });
  t.equal(res.status, 404);
  res = await api('', { token: other });
  t.equal((await j(res)).total, 0);
});

t.test('list: limit, cursor, status filter; update and delete', async (t) => {
  const tok = await adminToken(srv, { tenantId: uniqueName('whlist'), permissions: ['admin:webhooks:*'] });
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await j(await api('', { token: tok, method: 'POST', body: { name: `n${i}`, url: `https://example.com/${i}`, events: ['user.created'] } }))).id);
  let res = await api(`/${ids[0]}`, { token: tok, method: 'PUT', body: { status: 'inactive', events: ['user.created', 'user.deleted'] } });
  t.equal(res.status, 200);
  t.match(await j(res), { status: 'inactive', events: ['user.created', 'user.deleted'], name: 'n0' });
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    res = await api(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: tok });
    const page = await j(res);
    t.equal(page.total, 5);
    t.ok(page.items.length <= 2);
    t.same(Object.keys(page.items[0]).sort(), ['created_at', 'events', 'id', 'last_triggered_at', 'name', 'status', 'success_rate', 'url']);
    seen.push(...page.items.map((x: { id: string }) => x.id));
    cursor = page.cursor;
  } while (cursor);
  t.same([...seen].sort(), [...ids].sort(), 'every webhook once across pages');
  res = await api('?status=inactive', { token: tok });
  t.same((await j(res)).items.map((x: { id: string }) => x.id), [ids[0]]);
  res = await api('?limit=0', { token: tok });
  t.equal(res.status, 422);
  res = await api('?cursor=garbage', { token: tok });
  t.equal(res.status, 422);
  res = await api(`/${ids[1]}`, { token: tok, method: 'PUT', body: { status: 'paused' } });
  t.equal(res.status, 422);
  res = await api(`/${ids[1]}`, { token: tok, method: 'DELETE' });
  t.equal(res.status, 204);
  res = await api(`/${ids[1]}`, { token: tok });
  t.equal(res.status, 404);
  res = await api('/wh_nope', { token: tok, method: 'PUT', body: { name: 'x' } });
  t.equal(res.status, 404);
});

t.test('test operation: default and named events, signature, timeout error, Idempotency-Key', async (t) => {
  const rx = await startReceiver((r) => (JSON.parse(r.body).event === 'auth.login' ? { hang: true } : { status: 201, body: 'x'.repeat(5000) }));
  t.teardown(() => rx.close());
  const created = await j(await api('', { method: 'POST', body: { name: 'T', url: `${rx.url}/t`, events: ['user.created'], timeout: 1, headers: { 'X-Team': 'a' } } }));
  let res = await api(`/${created.id}/test`, { method: 'POST', body: {} });
  t.equal(res.status, 200);
  const r1 = await j(res);
  t.match(r1, { success: true, webhook_id: created.id, url: `${rx.url}/t`, status_code: 201 });
  t.equal(r1.response_body.length, 1024, 'response body truncated');
  t.type(r1.duration_ms, 'number');
  t.match(r1.timestamp, /Z$/);
  for (const h of ['Content-Type', 'X-Svc-Event', 'X-Svc-Delivery', 'X-Svc-Timestamp', 'X-Svc-Signature', 'X-Team']) t.ok(r1.headers_sent.includes(h), h);
  const got = rx.received[0]!;
  t.equal(JSON.parse(got.body).event, 'webhook.test');
  t.equal(got.headers['x-svc-signature'], 'sha256=' + createHmac('sha256', created.secret).update(`${got.headers['x-svc-timestamp']}.${got.body}`).digest('hex'));
  res = await api(`/${created.id}/test`, { method: 'POST', body: { event: 'user.deleted' } });
  t.match(await j(res), { success: true });
  t.match(JSON.parse(rx.received[1]!.body), { event: 'user.deleted', data: { test: true, user_id: 'usr_test' } });
  res = await api(`/${created.id}/test`, { method: 'POST', body: { event: 'auth.login' } });
  const r3 = await j(res);
  t.match(r3, { success: false, error: /timeout/ });
  t.notOk('status_code' in r3);
  res = await api(`/${created.id}/test`, { method: 'POST', body: { event: 'nope' } });
  t.equal(res.status, 422);
  const before = rx.received.length;
  const a = await j(await api(`/${created.id}/test`, { method: 'POST', body: {}, headers: { 'idempotency-key': 'k-1' } }));
  const b = await api(`/${created.id}/test`, { method: 'POST', body: {}, headers: { 'idempotency-key': 'k-1' } });
  t.same(await j(b), a, 'same key returns the first result');
  t.equal(b.headers.get('idempotent-replayed'), 'true');
  t.equal(rx.received.length, before + 1, 'and does not send again');
});

t.test('deliveries over the API: list with filters and cursor, one with attempts, manual retry', async (t) => {
  let fail = true;
  const rx = await startReceiver(() => (fail ? { status: 503 } : { status: 200 }));
  t.teardown(() => rx.close());
  const created = await j(await api('', { method: 'POST', body: { name: 'D', url: rx.url, events: ['user.updated', 'user.created'], retry_policy: { max_retries: 0, retry_interval: 1 } } }));
  for (let i = 0; i < 3; i++) await emit(srv.deps.sql, { tenantId: tenant, event: 'user.updated', data: { user_id: `u${i}` } });
  await emit(srv.deps.sql, { tenantId: tenant, event: 'user.created', data: { user_id: 'c' } });
  await waitFor(async () => (await j(await api(`/${created.id}/deliveries?status=failed`))).total === 4);
  let res = await api(`/${created.id}/deliveries?event=user.updated&limit=2`);
  let page = await j(res);
  t.equal(page.total, 3);
  t.equal(page.items.length, 2);
  t.type(page.cursor, 'string');
  const d = page.items[0];
  t.match(d, { event: 'user.updated', status: 'failed', attempt: 1, response_status: 503, error: 'HTTP 503', request_body: { event: 'user.updated', data: { user_id: /^u/ } } });
  t.type(d.triggered_at, 'number');
  page = await j(await api(`/${created.id}/deliveries?event=user.updated&limit=2&cursor=${page.cursor}`));
  t.equal(page.items.length, 1);
  t.equal(page.cursor, null, 'cursor is null at the end');
  page = await j(await api(`/${created.id}/deliveries`));
  t.equal(page.items.length, 4);
  t.equal(page.cursor, null);
  fail = false;
  res = await api(`/${created.id}/deliveries/${d.id}/retry`, { method: 'POST' });
  t.equal(res.status, 202);
  const rr = await j(res);
  t.same(Object.keys(rr).sort(), ['id', 'retry_at', 'status']);
  t.match(rr, { id: d.id, status: 'pending' });
  t.ok(Math.abs(rr.retry_at - Date.now() / 1000) < 60);
  await waitFor(async () => (await j(await api(`/${created.id}/deliveries/${d.id}`))).status === 'success');
  const one = await j(await api(`/${created.id}/deliveries/${d.id}`));
  t.same(one.attempts.map((a: { status: string }) => a.status), ['failed', 'success']);
  t.equal(one.attempt, 2);
  res = await api(`/${created.id}/deliveries/${d.id}/retry`, { method: 'POST' });
  t.equal(res.status, 409, 'only failed deliveries can be retried');
  res = await api(`/${created.id}/deliveries/whd_nope/retry`, { method: 'POST' });
  t.equal(res.status, 404);
  const w = await j(await api(`/${created.id}`));
  t.match(w, { total_deliveries: 5, failed_deliveries: 4, success_rate: 20 });
  t.type(w.last_failure_at, 'number');
  t.type(w.last_success_at, 'number');
});
