import t from 'tap';
import { createLogger } from '../../src/log.js';
import { registry } from '../../src/metrics.js';
import { startWebhookWorker } from '../../workers/webhook-worker.js';
import { j } from '../helpers/http.js';
import { waitFor } from '../helpers/processes.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';
import { addWebhook, emit, isolatedDatabase, startReceiver } from '../webhooks/fixtures.js';
import type { BootstrapResult } from '../../src/bootstrap.js';
import { parse, value, type Sample } from '../helpers/metrics.js';
import { adminOf } from '../admin/helpers.js';

let srv: TestServer;
let b: BootstrapResult;
let db: Awaited<ReturnType<typeof isolatedDatabase>>;
let worker: Awaited<ReturnType<typeof startWebhookWorker>>;
let rx: Awaited<ReturnType<typeof startReceiver>>;
const scrape = async () => {
  const res = await fetch(`${srv.url}/metrics`);
  t.equal(res.status, 200);
  return parse(await res.text());
};

t.before(async () => {
  // Its own database: the outbox gauges read every tenant's rows, and this file's relay must see only its own.
  db = await isolatedDatabase();
  srv = await startTestServer({ DATABASE_URL: db.url, WEBHOOK_ALLOW_PRIVATE: 'true' });
  worker = await startWebhookWorker(srv.config, createLogger('silent'), { relay: { pollMs: 100 } });
  rx = await startReceiver((_req, n) => (n === 1 ? { status: 200 } : { status: 503 }));
  b = await setupTenant(srv, 'metrics');
});
t.teardown(async () => { await rx.close(); await worker.close(); await srv.close(); await db.drop(); });

t.test('token issuance and introspection move the RED, tenant-class, cache and crypto metrics by what happened', async (t) => {
  const before = await scrape();
  const tokens: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' });
    t.equal(res.status, 200);
    tokens.push((await j(res)).access_token);
  }
  // Introspection: the first look at each token misses the answer cache, the next two hit it.
  for (const token of tokens) for (let i = 0; i < 3; i++) t.equal((await j(await postForm(`${srv.url}/introspect`, b.clients.resource_server, { token }))).active, true);
  const bad = await postForm(`${srv.url}/token`, { client_id: b.clients.exchanger.client_id, client_secret: 'wrong' }, { grant_type: 'client_credentials' });
  t.equal(bad.status, 401);
  const after = await scrape();
  const d = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);

  t.equal(d('svc_http_requests_total', { route: '/token', method: 'POST', status: '200' }), 3, 'three issued tokens');
  t.equal(d('svc_http_requests_total', { route: '/token', method: 'POST', status: '401' }), 1, 'one refused client');
  t.equal(d('svc_http_requests_total', { route: '/introspect', method: 'POST', status: '200' }), 9);
  t.equal(d('svc_http_request_duration_seconds_count', { route: '/introspect', method: 'POST' }), 9);
  t.equal(d('svc_http_requests_by_tenant_class_total', { tenant_class: 'tenant', status_class: '2xx' }), 12, 'the clients are of an ordinary tenant');
  t.ok(d('svc_http_requests_by_tenant_class_total', { tenant_class: 'unknown', status_class: '2xx' }) >= 1, 'the first scrape itself names no tenant');
  // The refused client is not authenticated, so its tenant is unknown.
  t.equal(d('svc_http_requests_by_tenant_class_total', { tenant_class: 'unknown', status_class: '4xx' }), 1);
  t.equal(d('svc_cache_requests_total', { cache: 'introspection', result: 'miss' }), 3);
  t.equal(d('svc_cache_requests_total', { cache: 'introspection', result: 'hit' }), 6, 'hit ratio 6 / 9');
  t.ok(d('svc_cache_requests_total', { cache: 'client', result: 'hit' }) >= 10, 'client records come from the process cache');
  if (srv.config.cryptoThreads > 0) t.equal(d('svc_crypto_queue_wait_seconds_count', { op: 'sign' }), 3, 'each signature waited once for a thread');
  t.ok(d('svc_redis_command_duration_seconds_count', { role: 'cache' }) >= 1, 'sampled Redis commands were timed');
  t.ok(value(after, 'svc_postgres_query_duration_seconds_count') > 0, 'Postgres statements were timed');
});

t.test('state gauges read at scrape time: revocation, signing key, lookup keys, process', async (t) => {
  const s = await scrape();
  t.equal(value(s, 'svc_revocation_state_loaded'), 1, 'revocation sentinels present');
  const created = value(s, 'svc_signing_key_created_timestamp_seconds', { alg: srv.config.tokenSigningAlg });
  t.ok(created > 1e9 && created <= Date.now() / 1000, 'the signing key was created in the past');
  // Tenants' own keys: one series per algorithm (no tenant label), the oldest active key of any tenant.
  const TENANT_KEY = 'svc_tenant_signing_key_oldest_created_timestamp_seconds';
  t.notOk(s.some((x) => x.name === TENANT_KEY), 'no series while no tenant has keys of its own');
  const platform = await adminOf(srv, ['admin:*'], 'metrics-plat', true);
  const own = await setupTenant(srv, 'metrics-own-keys');
  const other = await setupTenant(srv, 'metrics-own-keys-2');
  for (const tenant of [own.tenant_id, other.tenant_id]) {
    const r = await platform.call('PUT', `/api/admin/tenants/${tenant}`, { settings: { signing_algs: ['ES256'] } });
    t.equal(r.status, 200, JSON.stringify(r.body));
  }
  // One tenant's ES256 key is 100 days old: the gauge shows it, not the other tenant's fresh one.
  const old = Date.now() - 100 * 86_400_000;
  await srv.deps.sql`update tenant_signing_keys set created_at = ${old} where tenant_id = ${own.tenant_id} and alg = 'ES256' and status = 'active'`;
  await srv.deps.tokens.keys.load();
  const s2 = await scrape();
  t.equal(value(s2, TENANT_KEY, { alg: 'ES256' }), old / 1000, 'the oldest active tenant key\'s creation time');
  t.same(s2.filter((x) => x.name === TENANT_KEY).map((x) => x.labels), [{ alg: 'ES256' }], 'labelled by algorithm only');
  t.equal(value(s2, 'svc_signing_key_created_timestamp_seconds', { alg: srv.config.tokenSigningAlg }), created, 'the deployment key\'s gauge is unchanged');
  // Rotated (svc keys rotate --tenant): the next key, made when the tenant moved, is what it signs with now.
  const { rotateTenantKeys } = await import('../../src/tokens/tenant-keys.js');
  await rotateTenantKeys(srv.deps.sql, srv.config.keyEncryptionKey, own.tenant_id);
  await srv.deps.tokens.keys.load();
  t.ok(value(await scrape(), TENANT_KEY, { alg: 'ES256' }) > old / 1000 + 99 * 86_400, 'after the rotation the oldest key is recent');
  t.equal(value(s, 'svc_lookup_key_rotation_state', { state: 'none' }), 1, 'no lookup-key rotation in progress');
  t.equal(value(s, 'svc_lookup_key_rotation_state'), 1, 'exactly one state is current');
  t.ok(s.some((x) => x.name === 'nodejs_eventloop_lag_p99_seconds'), 'event-loop delay is exported');
  t.ok(s.some((x) => x.name === 'process_cpu_seconds_total'), 'process metrics are exported');
});

t.test('webhook deliveries, outbox lag and queue gauges', async (t) => {
  const before = await scrape();
  const d = (after: Sample[], name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);
  await addWebhook(srv.deps.sql, srv.config, b.tenant_id, { url: `${rx.url}/hook`, events: ['user.created'], retry_policy: { max_retries: 0 } });
  // The receiver answers the first delivery 200 and the second 503.
  await emit(srv.deps.sql, { tenantId: b.tenant_id, event: 'user.created', data: { user_id: 'u1' } });
  await waitFor(async () => d(await scrape(), 'svc_webhook_deliveries_total', { result: 'success', status_class: '2xx' }) === 1, 20_000, 100);
  await emit(srv.deps.sql, { tenantId: b.tenant_id, event: 'user.created', data: { user_id: 'u2' } });
  await waitFor(async () => d(await scrape(), 'svc_webhook_deliveries_total', { result: 'failure', status_class: '5xx' }) >= 1, 20_000, 100);
  let s = await scrape();
  t.equal(d(s, 'svc_webhook_deliveries_total', { result: 'success' }), 1);
  t.equal(value(s, 'svc_outbox_pending'), 0, 'the relay fanned out every event');
  t.equal(value(s, 'svc_outbox_lag_seconds'), 0);

  // A job due in an hour shows as delayed on its queue.
  // The webhook worker consumes the webhooks queue and reports it.
  await srv.deps.jobs.add('webhook-delivery', { tenantId: b.tenant_id, deliveryId: 'metrics-delayed', attempt: 1 }, { jobId: 'metrics-delayed', delay: 3_600_000 });
  s = await scrape();
  t.ok(value(s, 'svc_queue_jobs', { queue: 'webhooks', state: 'delayed' }) >= 1, 'the delayed job is counted');
  t.equal(value(s, 'svc_queue_jobs', { queue: 'webhooks', state: 'waiting' }), 0);
  t.equal(value(s, 'svc_queue_oldest_job_age_seconds', { queue: 'webhooks' }), 0, 'nothing waits to be taken');
});

t.test('every metric follows the Prometheus naming conventions', async (t) => {
  const metrics = await registry.getMetricsAsJSON();
  const ours = metrics.filter((m) => m.name.startsWith('svc_'));
  t.ok(ours.length >= 20, `${ours.length} svc metrics registered`);
  const UNITS = /_(seconds|bytes|total|ratio|timestamp_seconds)$/;
  // Gauges of counts (jobs, requests in flight, pending events, queue depth) and 0/1 states carry no unit.
  const UNITLESS_GAUGES = new Set(['svc_http_inflight_requests', 'svc_pool_queue_depth', 'svc_queue_jobs', 'svc_outbox_pending', 'svc_revocation_state_loaded', 'svc_lookup_key_rotation_state']);
  for (const m of metrics) {
    const type = String(m.type);
    t.match(m.name, /^[a-z_][a-z0-9_]*$/, `${m.name}: snake_case`);
    t.ok(m.help.length > 0, `${m.name}: has help`);
    if (type === 'counter') t.match(m.name, /_total$/, `${m.name}: a counter ends in _total`);
    // prom-client's own nodejs_active_*_total gauges predate the rule; ours follow it.
    else if (m.name.startsWith('svc_')) t.notMatch(m.name, /_total$/, `${m.name}: only counters end in _total`);
    if (type === 'histogram') t.match(m.name, /_seconds$|_bytes$/, `${m.name}: a histogram names its unit`);
    if (m.name.startsWith('svc_') && type === 'gauge' && !UNITLESS_GAUGES.has(m.name)) t.match(m.name, UNITS, `${m.name}: a gauge names its unit`);
    t.notMatch(m.name, /_(milliseconds|ms|microseconds|minutes|hours)(_|$)/, `${m.name}: base units only`);
  }
});
