import { Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import t from 'tap';
import { createLogger } from '../../src/log.js';
import { JOBS } from '../../src/jobs/table.js';
import { counterField } from '../../src/store/redis-keys.js';
import { startSmtpSink } from '../../src/mail/dev-sink.js';
import { closeRedis, createRedis, masters, whenReady } from '../../src/store/redis.js';
import { queuePrefix, redisKeys } from '../../src/store/redis-keys.js';
import { decodeJwt } from '../../src/tokens/jwt.js';
import { startEmailWorker } from '../../workers/email-worker.js';
import { startJobsWorker } from '../../workers/jobs-worker.js';
import { startWebhookWorker } from '../../workers/webhook-worker.js';
import { j } from '../helpers/http.js';
import { waitFor } from '../helpers/processes.js';
import { adminToken, postForm, setupTenant } from '../helpers/tokens.js';
import { logEnv } from '../logging/fixtures.js';
import { authorizeUrl, codeFor, pkce, sessionCookieFrom, uniqueEmail } from '../login/fixtures.js';
import { startReceiver } from '../webhooks/fixtures.js';
import { adminOf, api } from './helpers.js';

// A minute and a half to two on a slow day of this host (2 cores shared with the suite's other files): above tap's default 120 s per file.
t.setTimeout(300_000);

// Issue 29 item 10: a purged tenant must not come back. Tenant D records traffic of every kind (tokens,
// introspection, a revocation, a sign-in, admin actions, a quota policy, usage counters, a webhook
// delivery waiting an hour for its retry); this HTTP process still holds some of D's log records and
// usage counts in memory when D is deleted. After `deleted`, while the real log worker (a child process)
// runs its archive and governance cycles and the webhook relay and worker keep running, no row of D may
// appear in any table of the schema, no Redis key of D may remain (by name or content), and no queued
// job of D may remain; tenant K, which is not deleted, keeps everything. The HTTP process flushes its
// buffers only when told to (LOG_FLUSH_MS is long), so the late flush is deterministic.
const sink = await startSmtpSink();
const env = await logEnv({ WEBHOOK_ALLOW_PRIVATE: 'true', SMTP_URL: `smtp://127.0.0.1:${sink.port}`, LOG_FLUSH_MS: '60000' });
const { srv, sql } = env;
const cfg = srv.config;
await env.child({ LOG_FLUSH_MS: '50' });
const rx = await startReceiver(() => ({ status: 500 }));
const webhooks = await startWebhookWorker(cfg, createLogger('silent'), { relay: { pollMs: 100 } });
const mail = await startEmailWorker(cfg, createLogger('silent'));
// The purge itself runs in the jobs worker.
const jobsWorker = await startJobsWorker(cfg, createLogger('silent'));
// A client with no keyPrefix: reads every key of this file's prefix by its full name.
const raw = createRedis({ ...cfg, redisPrefix: '' }, 'cache');
const queueRedis = createRedis(cfg, 'producer');
const eventsConn = createRedis(cfg, 'worker');
const runs = new QueueEvents(JOBS['log-archive'].queue, { connection: eventsConn, prefix: queuePrefix(cfg) });
await runs.waitUntilReady();
await whenReady(queueRedis);
const webhookQueue = new Queue(JOBS['webhook-delivery'].queue, { connection: queueRedis, prefix: queuePrefix(cfg) });
t.teardown(async () => {
  await runs.close();
  await webhookQueue.close();
  await mail.close();
  await jobsWorker.close();
  await webhooks.close();
  await rx.close();
  await sink.close();
  await Promise.all([closeRedis(raw), closeRedis(queueRedis), closeRedis(eventsConn)]);
});

/** The log worker's completed runs (`repeat:<scheduler>:<millis>`), as observed on its queue's event stream. */
const completed: Array<{ scheduler: string; at: number }> = [];
runs.on('completed', ({ jobId }) => {
  const m = /^repeat:(log-archive|log-governance):(\d+)$/.exec(jobId);
  if (m) completed.push({ scheduler: m[1]!, at: Number(m[2]) });
});
/** Waits until the log worker has completed `n` archive runs and `n` governance runs scheduled after `since`, checking `each` meanwhile. */
async function cyclesAfter(since: number, n: number, each: () => Promise<void>): Promise<void> {
  await waitFor(async () => {
    await each();
    return ['log-archive', 'log-governance'].every((s) => completed.filter((c) => c.scheduler === s && c.at > since).length >= n);
  }, 20_000, 100);
}

type Subtest = Parameters<Parameters<typeof t.test>[0]>[0];
const platform = await adminOf(srv, ['admin:*'], 'pf-plat', true);
const tenant = async (label: string) => {
  const boot = await setupTenant(srv, label);
  return { id: boot.tenant_id, boot, call: api(srv, await adminToken(srv, { tenantId: boot.tenant_id, permissions: ['admin:*'] })) };
};
const D = await tenant('pf-del');
const K = await tenant('pf-keep');
const ok = <T>(r: { status: number; body: T }, what: string): T => { if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`); return r.body; };

/** Rows of the tenant in every base table of the schema with a tenant_id column (only the non-zero ones). */
async function rowsOf(tenantId: string): Promise<Record<string, number>> {
  const tables = await sql<{ table_name: string }[]>`select c.table_name from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = current_schema() and c.column_name = 'tenant_id' and t.table_type = 'BASE TABLE' order by 1`;
  const out: Record<string, number> = {};
  for (const { table_name } of tables) {
    const [r] = await sql<{ n: number }[]>`select count(*)::int as n from ${sql(table_name)} where tenant_id = ${tenantId}`;
    if (r!.n) out[table_name] = r!.n;
  }
  return out;
}

/** Every key, on every master, matching a pattern (SCAN, names as stored). */
async function scanAll(client: Redis, pattern: string): Promise<Array<{ node: Redis; key: string }>> {
  const out: Array<{ node: Redis; key: string }> = [];
  for (const node of masters(client)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) out.push({ node, key });
    } while (cursor !== '0');
  }
  return out;
}

/** The text of a key's content, whatever its type (streams skipped: BullMQ's event log). */
async function contentOf(node: Redis, key: string): Promise<string> {
  switch (await node.type(key)) {
    case 'string': return (await node.get(key)) ?? '';
    case 'hash': return JSON.stringify(await node.hgetall(key));
    case 'zset': return JSON.stringify(await node.zrange(key, 0, -1));
    case 'set': return JSON.stringify(await node.smembers(key));
    case 'list': return JSON.stringify(await node.lrange(key, 0, -1));
    default: return '';
  }
}

/** Keys of this file's prefix whose name or content mentions one of `ids` (the tenant's status mark excepted: it stays by design). */
async function redisKeysOf(tenantId: string, ids: string[]): Promise<string[]> {
  const mark = cfg.redisPrefix + redisKeys.tenantSuspended(tenantId);
  const left: string[] = [];
  for (const { node, key } of await scanAll(raw, `${cfg.redisPrefix}*`)) {
    if (key === mark) continue;
    const text = key + (await contentOf(node, key));
    if (ids.some((id) => text.includes(id))) left.push(key);
  }
  return left;
}

/** BullMQ jobs, in any queue of this deployment and any state, whose data names the tenant. */
async function jobsOf(tenantId: string): Promise<string[]> {
  const left: string[] = [];
  for (const { node, key } of await scanAll(queueRedis, `${queuePrefix(cfg).replace(/[{}]/g, '\\$&')}:*`)) {
    if ((await node.type(key)) !== 'hash') continue;
    const data = await node.hget(key, 'data');
    if (data?.includes(tenantId)) left.push(key);
  }
  return left;
}

/** Traffic of one tenant: tokens (token decisions logged), introspection, a revocation, a user, a failing webhook, a quota policy. */
async function traffic(t: Subtest, x: typeof D) {
  ok(await x.call('PUT', '/api/admin/logging-policies/settings', { token_decision_logging: true }), 'logging settings');
  ok(await x.call('POST', '/api/admin/webhooks', { name: 'h', url: `${rx.url}/hook`, events: ['user.created'], retry_policy: { max_retries: 3, retry_interval: 3600 } }), 'webhook');
  ok(await x.call('POST', '/api/admin/logging-policies/quotas', { metric_name: 'records', window_kind: 'day', hard_limit: 1, enforcement_mode: 'notify' }), 'quota policy');
  const user: any = ok(await x.call('POST', '/api/admin/users', { email: uniqueEmail('pf'), name: 'P' }), 'user');
  const tokens: string[] = [];
  for (let i = 0; i < 3; i++) tokens.push((await j(await postForm(`${srv.url}/token`, x.boot.clients.exchanger, { grant_type: 'client_credentials', scope: 'read' }))).access_token);
  t.equal((await j(await postForm(`${srv.url}/introspect`, x.boot.clients.resource_server, { token: tokens[0]! }))).active, true);
  t.equal((await postForm(`${srv.url}/revoke`, x.boot.clients.exchanger, { token: tokens[1]! })).status, 200);
  return { user, jtis: tokens.map((tk) => String(decodeJwt(tk).payload.jti)) };
}

/** The spec's login flow for a new address of the tenant: an interaction, a code, a session, an authorization code, tokens. */
async function signIn(t: Subtest, x: typeof D): Promise<{ jti: string }> {
  const web = x.boot.clients.web;
  const email = uniqueEmail('pf-login');
  const { verifier, challenge } = pkce();
  const params = { response_type: 'code', client_id: web.client_id, redirect_uri: web.redirect_uris[0]!, scope: 'openid email offline_access', state: 's', nonce: 'n', code_challenge: challenge, code_challenge_method: 'S256' };
  t.equal((await fetch(authorizeUrl(srv.url, params), { headers: { accept: 'application/json' }, redirect: 'manual' })).status, 200);
  t.equal((await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, client_id: web.client_id }) })).status, 200);
  const code = await codeFor(sink, email);
  const verified = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, code }) });
  t.equal(verified.status, 200);
  const cookie = sessionCookieFrom(verified)!;
  const res = await fetch(authorizeUrl(srv.url, { ...params, prompt: 'none' }), { headers: { accept: 'application/json', cookie }, redirect: 'manual' });
  t.equal(res.status, 302);
  const authCode = new URL(res.headers.get('location')!).searchParams.get('code')!;
  const tok = await j(await postForm(`${srv.url}/token`, web, { grant_type: 'authorization_code', code: authCode, redirect_uri: web.redirect_uris[0]!, code_verifier: verifier }));
  t.type(tok.refresh_token, 'string');
  return { jti: String(decodeJwt(tok.access_token).payload.jti) };
}

t.test('after the purge no row, Redis key or queued job of the tenant comes back; another tenant keeps its own', async (t) => {
  const dTraffic = await traffic(t, D);
  const kTraffic = await traffic(t, K);
  const login = await signIn(t, D);
  // Each tenant's first delivery fails and its retry waits an hour in the queue.
  const delayed = async (tenantId: string) => (await webhookQueue.getDelayed()).filter((job) => job.data.tenantId === tenantId).length;
  await waitFor(async () => (await delayed(D.id)) >= 1 && (await delayed(K.id)) >= 1, 15_000, 100);
  // Everything so far flushed, archived and rolled up, so D has rows and counters of every kind...
  await srv.deps.logs!.flush();
  await srv.deps.logGovernance!.flush();
  await waitFor(async () => {
    const rows = await rowsOf(D.id);
    return ['log_chunks', 'log_key_registries', 'log_usage_aggregates', 'log_quota_evaluations'].every((table) => rows[table]) && !rows.log_records;
  }, 15_000, 100);
  // ...then traffic just before the deletion, which this process holds in memory (records and counts).
  for (let i = 0; i < 3; i++) t.equal((await postForm(`${srv.url}/token`, D.boot.clients.exchanger, { grant_type: 'client_credentials', scope: 'read' })).status, 200);
  for (let i = 0; i < 3; i++) t.equal((await postForm(`${srv.url}/token`, K.boot.clients.exchanger, { grant_type: 'client_credentials', scope: 'read' })).status, 200);

  const clientIds = (await sql<{ client_id: string }[]>`select client_id from clients where tenant_id = ${D.id}`).map((c) => c.client_id);
  const userIds = (await sql<{ id: string }[]>`select id from users where tenant_id = ${D.id}`).map((u) => u.id);
  const ids = [D.id, ...clientIds, ...userIds, ...dTraffic.jtis, login.jti];
  const before = await rowsOf(D.id);
  for (const table of ['users', 'clients', 'refresh_tokens', 'revocations', 'webhook_deliveries', 'event_outbox', 'admin_audit_log', 'log_chunks', 'log_key_registries', 'log_usage_aggregates', 'log_quota_evaluations']) {
    t.ok(before[table], `${table} holds rows of D before`);
  }
  const keysBefore = await redisKeysOf(D.id, ids);
  for (const family of ['sess:', 'lsu:', 'ik:', 'rv:', 'lu:{logusage}:m:']) t.ok(keysBefore.some((k) => k.startsWith(cfg.redisPrefix + family)), `a ${family} key of D exists before`);
  t.ok((await jobsOf(D.id)).length > 0, 'a queued job of D exists before');

  const del = await platform.call('DELETE', `/api/admin/tenants/${D.id}`);
  t.equal(del.status, 202, JSON.stringify(del.body));
  await waitFor(async () => (await platform.call('GET', `/api/admin/tenants/${D.id}`)).body.status === 'deleted', 30_000, 100);

  // This process flushes what it buffered before the deletion: D's records and counts must go nowhere.
  await srv.deps.logs!.flush();
  await srv.deps.logGovernance!.flush();
  const since = Date.now();
  const seen = { rows: {} as Record<string, number>, keys: [] as string[], jobs: [] as string[] };
  const check = async () => {
    const rows = await rowsOf(D.id);
    const keys = await redisKeysOf(D.id, ids);
    const jobs = await jobsOf(D.id);
    for (const [table, n] of Object.entries(rows)) seen.rows[table] = Math.max(seen.rows[table] ?? 0, n);
    seen.keys = [...new Set([...seen.keys, ...keys])];
    seen.jobs = [...new Set([...seen.jobs, ...jobs])];
  };
  // Three archive and three governance runs of the real log worker after the late flush, checked all along.
  await cyclesAfter(since, 3, check);
  await check();
  t.same(seen.rows, {}, 'no table of the schema ever held a row of D after the purge');
  t.same(seen.keys, [], 'no Redis key of D (by name or content) after the purge');
  t.same(seen.jobs, [], 'no queued job of D in any queue after the purge');

  // K was not touched: its delayed retry, its rows, and its usage (still rolled up).
  t.ok(await delayed(K.id) >= 1, "K's delayed webhook retry is still queued");
  const kRows = await rowsOf(K.id);
  for (const table of ['users', 'webhook_deliveries', 'log_chunks', 'log_usage_aggregates']) t.ok(kRows[table], `K still has ${table}`);
  t.ok((await redisKeysOf(K.id, [K.id, ...kTraffic.jtis])).length > 0, 'K still has Redis keys');
  t.equal(await sql`select 1 from tenants where id = ${D.id} and status = 'deleted'`.then((r) => r.length), 1, 'D stays a deleted tombstone');
});

t.test('a counter written for the deleted tenant by a process that missed the deletion is dropped by the rollup, not rolled up', async (t) => {
  // As a process would that counted before the deletion and flushed after the purge without having heard of it.
  const minute = Math.floor(Date.now() / 60_000) * 60_000;
  const field = counterField(D.id, '', 'token', 'data', 'bulk', 'records');
  await srv.deps.redis.hincrby(redisKeys.logUsageMinute(minute), field, 5);
  await srv.deps.redis.zadd(redisKeys.logUsageMinutes, minute, String(minute));
  const since = Date.now();
  const rows: Record<string, number>[] = [];
  await cyclesAfter(since, 2, async () => { rows.push(await rowsOf(D.id)); });
  t.same(rows.filter((r) => Object.keys(r).length), [], 'no aggregate (or any row) of D was built from it');
  t.equal(await srv.deps.redis.hexists(redisKeys.logUsageMinute(minute), field), 0, 'the counter of D is removed');
});
