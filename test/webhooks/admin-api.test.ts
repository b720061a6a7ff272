import t from 'tap';
import { createHmac } from 'node:crypto';
import { createLogger } from '../../src/log.js';
import { startWebhookWorker } from '../../workers/webhook-worker.js';
import { uniqueName } from '../helpers/env.js';
import { j } from '../helpers/http.js';
import { waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { adminToken } from '../helpers/tokens.js';
import { scrape, value, type Sample } from '../helpers/metrics.js';
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
  // Issue 21 item 12: the same key with a different body is refused, naming the mismatch.
  const c = await api(`/${created.id}/test`, { method: 'POST', body: { event: 'user.deleted' }, headers: { 'idempotency-key': 'k-1' } });
  t.equal(c.status, 422);
  const cb = await j(c);
  t.equal(cb.error, 'validation_error');
  t.match(cb.details['Idempotency-Key'][0], /different request body/);
  t.equal(rx.received.length, before + 1, 'nothing is sent for the refused reuse');

  // Each test send is in the delivery log (the replay is not), under the id the receiver saw.
  const page = await j(await api(`/${created.id}/deliveries`));
  t.equal(page.total, 4, 'three sends and one keyed send; no delivery for the replay or the refused reuse');
  const byId = new Map(page.items.map((d: { id: string }) => [d.id, d]));
  const first = byId.get(got.headers['x-svc-delivery'] as string);
  t.match(first, { event: 'webhook.test', status: 'success', attempt: 1, response_status: 201, error: null, request_body: JSON.parse(got.body), completed_at: Number });
  t.ok(r1.headers_sent.includes('X-Svc-Delivery'));
  t.match(byId.get(rx.received[1]!.headers['x-svc-delivery'] as string), { event: 'user.deleted', status: 'success', request_body: { event: 'user.deleted', data: { test: true } } });
  const timedOut = page.items.find((d: { event: string }) => d.event === 'auth.login');
  t.match(timedOut, { status: 'failed', attempt: 1, response_status: null, error: /timeout/ });
  t.equal((await j(await api(`/${created.id}/deliveries?status=failed`))).total, 1, 'the status filter sees it');
  const one = await j(await api(`/${created.id}/deliveries/${timedOut.id}`));
  t.match(one.attempts, [{ attempt: 1, status: 'failed', error: /timeout/ }]);
  t.match(await j(await api(`/${created.id}`)), { total_deliveries: 4, failed_deliveries: 1, total_attempts: 4, failed_attempts: 1 }, 'test sends count (docs/decisions.md)');
  t.equal((await api(`/${created.id}/deliveries`, { token: other })).status, 404, 'another tenant does not see the log');
});

t.test('a failed test send is retried from the log through the normal path', async (t) => {
  let fail = true;
  const rx = await startReceiver(() => (fail ? { status: 500, body: 'down' } : { status: 200 }));
  t.teardown(() => rx.close());
  const created = await j(await api('', { method: 'POST', body: { name: 'RT', url: rx.url, events: ['user.created'] } }));
  const r = await j(await api(`/${created.id}/test`, { method: 'POST', body: {} }));
  t.match(r, { success: false, status_code: 500, error: 'HTTP 500', response_body: 'down' });
  const [d] = (await j(await api(`/${created.id}/deliveries`))).items;
  t.match(d, { event: 'webhook.test', status: 'failed', attempt: 1, response_status: 500, error: 'HTTP 500' });
  fail = false;
  const res = await api(`/${created.id}/deliveries/${d.id}/retry`, { method: 'POST' });
  t.equal(res.status, 202);
  await waitFor(async () => (await j(await api(`/${created.id}/deliveries/${d.id}`))).status === 'success');
  t.equal(rx.received.length, 2);
  t.equal(rx.received[1]!.headers['x-svc-delivery'], d.id, 'the same delivery, sent again by the worker');
  t.same(JSON.parse(rx.received[1]!.body), JSON.parse(rx.received[0]!.body), 'with the body sent the first time');
  t.match(await j(await api(`/${created.id}`)), { total_deliveries: 1, failed_deliveries: 0, total_attempts: 2, failed_attempts: 1 });
});

t.test('a test send leaves what a worker delivery leaves: its attempt\'s log record and the delivery metric', async (t) => {
  let status = 200;
  const rx = await startReceiver(() => ({ status }));
  t.teardown(() => rx.close());
  const created = await j(await api('', { method: 'POST', body: { name: 'Traces', url: `${rx.url}/t`, events: ['user.created'], retry_policy: { max_retries: 0 } } }));
  // One delivery made by the worker, to compare with.
  await emit(srv.deps.sql, { tenantId: tenant, event: 'user.created', data: { user_id: 'u-traces' } });
  await waitFor(async () => (await j(await api(`/${created.id}/deliveries?status=success`))).total === 1);
  const before = await scrape(srv.url);
  const sent = await j(await api(`/${created.id}/test`, { method: 'POST', body: {} }));
  status = 503;
  const refused = await j(await api(`/${created.id}/test`, { method: 'POST', body: { event: 'user.deleted' } }));
  t.match([sent, refused], [{ success: true, status_code: 200 }, { success: false, status_code: 503 }]);
  const after = await scrape(srv.url);
  const counted = (s: Sample[], labels: Record<string, string>) => value(s, 'svc_webhook_deliveries_total', labels);
  t.equal(counted(after, { result: 'success', status_class: '2xx' }) - counted(before, { result: 'success', status_class: '2xx' }), 1, 'the answered test send is counted as a successful delivery attempt');
  t.equal(counted(after, { result: 'failure', status_class: '5xx' }) - counted(before, { result: 'failure', status_class: '5xx' }), 1, 'the refused one as a failed attempt with its status class');

  const records = await srv.deps.sql<{ plane: string; lane: string; ts: string; body: Record<string, unknown> }[]>`
    select plane, lane, ts::text, body from log_records where tenant_id = ${tenant} and log_type = 'webhook_delivery' and body->>'webhook_id' = ${created.id} order by id`;
  const byWorker = records.find((r) => r.body.event === 'user.created')!;
  t.ok(byWorker, 'the worker\'s attempt has its log record');
  const [okId, failedId] = rx.received.slice(-2).map((r) => r.headers['x-svc-delivery']);
  const fromTests = records.filter((r) => r.body.event !== 'user.created');
  t.match(fromTests.map((r) => r.body), [
    { webhook_id: created.id, delivery_id: okId, event: 'webhook.test', attempt: 1, success: true, response_status: 200, duration_ms: Number, error: null },
    { webhook_id: created.id, delivery_id: failedId, event: 'user.deleted', attempt: 1, success: false, response_status: 503, duration_ms: Number, error: 'HTTP 503' },
  ], 'each test send has its attempt\'s log record, under the delivery id the receiver saw');
  for (const r of fromTests) {
    t.same(Object.keys(r.body).sort(), Object.keys(byWorker.body).sort(), 'with the fields of the worker\'s record');
    t.same([r.plane, r.lane], [byWorker.plane, byWorker.lane], 'in the same plane and lane');
  }
  // The log records name the deliveries the log lists.
  const listed = (await j(await api(`/${created.id}/deliveries`))).items.map((d: { id: string }) => d.id);
  for (const r of fromTests) t.ok(listed.includes(r.body.delivery_id), 'a delivery of the webhook\'s log');
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
  // Issue 21 item 5: four deliveries, one of them retried by hand to success; five attempts.
  t.match(w, { total_deliveries: 4, failed_deliveries: 3, success_rate: 25, total_attempts: 5, failed_attempts: 4 });
  t.type(w.last_failure_at, 'number');
  t.type(w.last_success_at, 'number');
});

t.test('create, update, delete, test and retry are in the admin audit log, without the secret', async (t) => {
  let fail = true;
  const rx = await startReceiver(() => (fail ? { status: 503 } : { status: 200 }));
  t.teardown(() => rx.close());
  const auditTenant = uniqueName('whaudit');
  const tok = await adminToken(srv, { tenantId: auditTenant, permissions: ['admin:webhooks:*', 'admin:audit-log:read', 'admin:audit-log:read-sensitive'] });
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${srv.url}${path}`, {
      method, headers: { authorization: `Bearer ${tok}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: res.status === 204 ? null : await j(res) };
  };
  const secrets = ['audit-secret-one-0123456789', 'audit-secret-two-0123456789'];
  const hook = await call('POST', '/api/admin/webhooks', { name: 'audited', url: rx.url, events: ['user.created'], secret: secrets[0], retry_policy: { max_retries: 0, retry_interval: 1 } });
  t.equal(hook.status, 201);
  const id = hook.body.id;
  t.equal((await call('PUT', `/api/admin/webhooks/${id}`, { name: 'audited 2', secret: secrets[1] })).status, 200);
  const tested = await call('POST', `/api/admin/webhooks/${id}/test`, {}, { 'idempotency-key': 'audit-k' });
  t.equal(tested.status, 200);
  t.equal((await call('POST', `/api/admin/webhooks/${id}/test`, {}, { 'idempotency-key': 'audit-k' })).status, 200, 'a replay');
  await emit(srv.deps.sql, { tenantId: auditTenant, event: 'user.created', data: { user_id: 'audited-user' } });
  // (The failed test send is in the log too: the event's delivery is found by its event.)
  await waitFor(async () => (await call('GET', `/api/admin/webhooks/${id}/deliveries?status=failed&event=user.created`)).body.total === 1);
  const delivery = (await call('GET', `/api/admin/webhooks/${id}/deliveries?event=user.created`)).body.items[0];
  fail = false;
  t.equal((await call('POST', `/api/admin/webhooks/${id}/deliveries/${delivery.id}/retry`)).status, 202);
  const generated = await call('POST', '/api/admin/webhooks', { name: 'short-lived', url: rx.url, events: ['user.created'] });
  t.match(generated.body.secret, /^whsec_/);
  secrets.push(generated.body.secret);
  t.equal((await call('DELETE', `/api/admin/webhooks/${generated.body.id}`)).status, 204);

  const log = await call('GET', '/api/admin/admin-audit-log?resource_type=webhook&limit=100');
  t.equal(log.status, 200);
  const entries = [...log.body.items].reverse();
  const of = (rid: string) => entries.filter((e: { resource_id: string }) => e.resource_id === rid).map((e: { action: string; result: string }) => `${e.action}:${e.result}`);
  t.same(of(id), ['webhook.create:success', 'webhook.update:success', 'webhook.test:success', 'webhook_delivery.retry:success'], 'the replayed test is not audited again');
  t.same(of(generated.body.id), ['webhook.create:success', 'webhook.delete:success']);
  const find = (action: string, rid: string) => entries.find((e: { action: string; resource_id: string }) => e.action === action && e.resource_id === rid);
  t.match(find('webhook.create', id).after, { id, name: 'audited', url: rx.url, events: ['user.created'], status: 'active' });
  const update = find('webhook.update', id);
  t.match(update, { before: { name: 'audited' }, after: { name: 'audited 2' }, metadata: { secret_changed: true } });
  t.match(find('webhook.test', id).metadata, { success: false, status_code: 503 }, 'what the receiver answered');
  t.match(find('webhook_delivery.retry', id), { metadata: { delivery_id: delivery.id }, before: { status: 'failed' }, after: { status: 'pending' } });
  t.match(find('webhook.delete', generated.body.id).before, { id: generated.body.id, name: 'short-lived' });

  // Neither the secrets nor their ciphertexts appear anywhere in the entries (list or single reads).
  const single = await Promise.all(entries.map((e: { id: string }) => call('GET', `/api/admin/admin-audit-log/${e.id}`)));
  const everything = JSON.stringify(entries) + JSON.stringify(single.map((r) => r.body));
  const [row] = await srv.deps.sql<{ secret_enc: Buffer }[]>`select secret_enc from webhooks where tenant_id = ${auditTenant} and id = ${id}`;
  for (const s of secrets) t.notOk(everything.includes(s), 'no secret in the audit log');
  for (const enc of [row!.secret_enc.toString('hex'), row!.secret_enc.toString('base64'), row!.secret_enc.toString('base64url')]) t.notOk(everything.includes(enc), 'no ciphertext in the audit log');
  t.notMatch(everything, /"secret(_enc)?"/, 'no secret field at all');
  const raw = await srv.deps.sql`select before, after, metadata from admin_audit_log where tenant_id = ${auditTenant}`;
  t.ok(raw.length >= entries.length);
  const stored = JSON.stringify(raw);
  for (const s of secrets) t.notOk(stored.includes(s), 'nor in the stored rows');
  t.notMatch(stored, /secret_enc/);
});
