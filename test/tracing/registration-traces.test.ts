import t from 'tap';
import { api } from '../admin/helpers.js';
import { person, requestBody, step } from '../elevation/helpers.js';
import { waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { adminToken, postForm, setupTenant } from '../helpers/tokens.js';
import { type OtlpSpan, attr, descends, parent, startOtlpReceiver } from './otlp-receiver.js';

// Issue 34: dynamic client registration (RFC 7591/7592), token status lists and approval artifacts make
// their Postgres, Redis and signing spans under the request's server span, as the token endpoint does.
// Same method as traces.test.ts: the real exporter posts OTLP/HTTP JSON to a local receiver, and each
// request's trace is found by the trace id of the traceparent it sent.

const receiver = await startOtlpReceiver();
t.teardown(() => receiver.close());
const { spans, bodies } = receiver;
const otlp = receiver.url;

const srv = await startTestServer({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_SERVICE_NAME: 'svc-test' });
t.teardown(() => srv.close());
const b = await setupTenant(srv, 'regtrace');
const admin = api(srv, await adminToken(srv, { tenantId: b.tenant_id, permissions: ['admin:*'] }));

const traceOf = (traceId: string) => spans.filter((s) => s.traceId === traceId);
const isPg = (s: OtlpSpan) => attr(s, 'db.system.name') === 'postgresql';
const isRedis = (s: OtlpSpan) => s.name.startsWith('redis ');
const isSign = (s: OtlpSpan) => s.name === 'crypto signBatch';

type Json = Record<string, any>;
type Subtest = Parameters<Parameters<typeof t.test>[0]>[0];
/** A request sent with a sampled traceparent; its trace id with the answer. */
async function traced(method: string, path: string, opts: { token?: string; body?: unknown } = {}): Promise<{ status: number; body: Json; traceId: string; spanId: string }> {
  const p = parent();
  const res = await fetch(srv.url + path, {
    method,
    headers: { traceparent: p.header, ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}), ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  const body = res.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(text) as Json : { text };
  return { status: res.status, body, traceId: p.traceId, spanId: p.spanId };
}

/**
 * The request's trace once its server span and the client spans `want` names have been exported (spans
 * of one request may reach the collector in different batches), checked: one server span, a child of
 * the caller's, and every Postgres, Redis and signing span of the trace under it.
 */
async function checkTrace(t: Subtest, r: { traceId: string; spanId: string }, name: string, want: Array<'postgres' | 'redis' | 'sign'>): Promise<OtlpSpan[]> {
  const has = { postgres: isPg, redis: isRedis, sign: isSign };
  await waitFor(async () => { const tr = traceOf(r.traceId); return tr.some((s) => s.kind === 2) && want.every((w) => tr.some(has[w])); }, 10_000, 50).catch(() => {});
  const trace = traceOf(r.traceId);
  const servers = trace.filter((s) => s.kind === 2);
  t.equal(servers.length, 1, `one server span in the trace of ${name}`);
  const server = servers[0]!;
  t.equal(server?.name, name, 'named by the route template');
  t.equal(server?.parentSpanId, r.spanId, 'a child of the caller\'s span (W3C traceparent)');
  const clients = trace.filter((s) => isPg(s) || isRedis(s) || isSign(s));
  for (const w of want) t.ok(trace.some(has[w]), `${w} spans in the trace (${clients.map((s) => s.name).join(', ')})`);
  t.ok(server && clients.every((s) => descends(trace, s, server.spanId)), 'every client span is under the server span');
  return trace;
}

const secrets: string[] = [];

t.test('dynamic registration, and reading and replacing the registration, each make one trace with their Postgres and Redis work', async (t) => {
  const iat = await admin('POST', '/api/admin/registration/initial-access-tokens', { description: 'traced', max_uses: 1 });
  t.equal(iat.status, 201, JSON.stringify(iat.body));
  secrets.push(iat.body.token);
  const metadata = { client_name: 'Traced registration', redirect_uris: ['https://app.example/cb'], grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic' };

  const reg = await traced('POST', '/register', { token: iat.body.token, body: metadata });
  t.equal(reg.status, 201, JSON.stringify(reg.body));
  const { client_id: clientId, client_secret: secret, registration_access_token: rat } = reg.body;
  t.type(secret, 'string');
  secrets.push(secret, rat);
  // The initial access token is checked in Postgres, the per-address limit counted in Redis, the client written in one transaction.
  await checkTrace(t, reg, 'POST /register', ['postgres', 'redis']);

  const read = await traced('GET', `/register/${clientId}`, { token: rat });
  t.equal(read.status, 200, JSON.stringify(read.body));
  await checkTrace(t, read, 'GET /register/:clientId', ['postgres']);

  const put = await traced('PUT', `/register/${clientId}`, { token: rat, body: { ...metadata, client_id: clientId, client_name: 'Traced, renamed' } });
  t.equal(put.status, 200, JSON.stringify(put.body));
  t.equal(put.body.client_name, 'Traced, renamed');
  t.not(put.body.registration_access_token, rat, 'a new registration access token');
  secrets.push(put.body.registration_access_token);
  await checkTrace(t, put, 'PUT /register/:clientId', ['postgres']);

  const del = await traced('DELETE', `/register/${clientId}`, { token: put.body.registration_access_token });
  t.equal(del.status, 204);
  // The client's access tokens are cut off by a mark, in Postgres and then in Redis.
  await checkTrace(t, del, 'DELETE /register/:clientId', ['postgres', 'redis']);
});

t.test('a status list fetch is one trace: the list read from Postgres and signed under the request', async (t) => {
  await srv.deps.sql`update tenants set settings = settings || ${srv.deps.sql.json({ status_list: true })} where id = ${b.tenant_id}`;
  await srv.deps.tokens.tenantSettings.changed(b.tenant_id);
  // A token of the tenant hands list 0 out; nothing has built it yet, so the traced fetch builds and signs it.
  const cc = await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' });
  t.equal(cc.status, 200);
  const list = await traced('GET', `/statuslists/${b.tenant_id}/0`);
  t.equal(list.status, 200, list.body.text);
  await checkTrace(t, list, 'GET /statuslists/:tenant/:list', ['postgres', 'sign']);
});

t.test('an approval artifact request is one trace with its Postgres work', async (t) => {
  const requester = await person(srv, b.tenant_id, 'requester');
  const approver = await person(srv, b.tenant_id, 'approver', ['admin:approvals:read', 'admin:approvals:approve']);
  const req = await requester.call('POST', '/api/admin/approvals', requestBody(b.clients.resource_server.audience, [step('owner', approver.id)]));
  t.equal(req.status, 201, JSON.stringify(req.body));
  const a = await requester.call('POST', `/api/admin/approvals/${req.body.public_request_id}/steps/${req.body.approvals[0].id}/artifacts`, {});
  t.equal(a.status, 201, JSON.stringify(a.body));
  const detail = await traced('GET', `/api/approval-artifacts/${a.body.artifact_id}`, { token: approver.token });
  t.equal(detail.status, 200, JSON.stringify(detail.body));
  await checkTrace(t, detail, 'GET /api/approval-artifacts/:artifactId', ['postgres']);
  const done = await traced('POST', `/api/approval-artifacts/${a.body.artifact_id}/complete`, { token: approver.token, body: { decision: 'approve' } });
  t.equal(done.status, 200, JSON.stringify(done.body));
  await checkTrace(t, done, 'POST /api/approval-artifacts/:artifactId/complete', ['postgres']);
});

t.test('no exported span holds the initial access token, a client secret or a registration access token', async (t) => {
  t.ok(secrets.length >= 4 && secrets.every((s) => typeof s === 'string' && s.length > 10), `${secrets.length} secrets to look for`);
  const all = bodies.join('\n');
  for (const s of secrets) t.notOk(all.includes(s), 'not in any exported span');
  // The bearer part of the initial access token alone (after its id) is not there either.
  t.notOk(all.includes(secrets[0]!.split('.')[1]!), 'nor the initial access token\'s secret part');
});
