import t from 'tap';
import { tracingFrom } from '../../src/tracing/config.js';
import { contextMode } from '../../src/tracing/start.js';
import { waitFor } from '../helpers/processes.js';
import { basic } from '../helpers/tokens.js';
import { codeFor, startLoginEnv, uniqueEmail } from '../login/fixtures.js';
import { createLogger } from '../../src/log.js';
import { startWebhookWorker } from '../../workers/webhook-worker.js';
import { startReceiver } from '../webhooks/fixtures.js';
import { attr, descends, parent, startOtlpReceiver } from './otlp-receiver.js';

// Issue 34 item 1: with an OTLP endpoint set, svc sends a trace per request to it (OTLP/HTTP, JSON). A
// local receiver collects what the real exporter posts; traces are found by the trace id of the
// traceparent each request sends, so the assertions read what an operator's collector would show.

const receiver = await startOtlpReceiver();
t.teardown(() => receiver.close());
const { spans, bodies } = receiver;
const otlp = receiver.url;

const env = await startLoginEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_SERVICE_NAME: 'svc-test' });
t.teardown(() => env.close());
const { srv, sink, tenant: b } = env;

const traceOf = (traceId: string) => spans.filter((s) => s.traceId === traceId);

t.test('the OTEL_* variables as the specification names them', async (t) => {
  const problems: string[] = [];
  t.equal(tracingFrom({}, problems), null, 'off without an endpoint');
  t.equal(tracingFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }, problems), null, 'off when disabled');
  const c = tracingFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/', OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20x,x-a=b', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' }, problems)!;
  t.equal(c.endpoint, 'http://c:4318/v1/traces', 'the signal path is added to the base endpoint');
  t.same(c.headers, { authorization: 'Bearer x', 'x-a': 'b' });
  t.equal(c.sampler, 'parentbased_traceidratio');
  t.equal(c.ratio, 0.01);
  t.equal(tracingFrom({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/custom' }, problems)!.endpoint, 'http://c:4318/custom', 'the signal endpoint is used as given');
  t.same(problems, []);
  tracingFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER: 'sometimes', OTEL_TRACES_SAMPLER_ARG: '2', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, problems);
  t.equal(problems.length, 3, problems.join('; '));
});

t.test('a token exchange is one trace: the server span under the caller\'s, the signing pool and Redis under it', async (t) => {
  // The HTTP server carries each sampled request's context explicitly: no context manager that would
  // turn promise hooks on (src/tracing/sync-context.ts), so every span below was made from the request.
  t.equal(contextMode(), 'explicit', 'the HTTP process never enables AsyncLocalStorage');
  const ex = b.clients.exchanger;
  const cc = await (await fetch(`${srv.url}/token`, { method: 'POST', headers: { authorization: basic(ex.client_id, ex.client_secret), 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials&scope=read' })).json() as { access_token: string };
  const p = parent();
  const res = await fetch(`${srv.url}/token`, {
    method: 'POST',
    headers: { authorization: basic(ex.client_id, ex.client_secret), 'content-type': 'application/x-www-form-urlencoded', traceparent: p.header },
    body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: cc.access_token, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', audience: b.clients.resource_server.audience, scope: 'read' }),
  });
  t.equal(res.status, 200);
  const issued = await res.json() as { access_token: string };
  await waitFor(async () => traceOf(p.traceId).some((s) => s.name.startsWith('crypto ')) && traceOf(p.traceId).some((s) => s.kind === 2), 10_000, 50);
  const trace = traceOf(p.traceId);
  const server = trace.find((s) => s.kind === 2)!;
  t.equal(server.name, 'POST /token', 'named by the route template');
  t.equal(server.parentSpanId, p.spanId, 'a child of the caller\'s span (W3C traceparent)');
  t.equal(attr(server, 'http.response.status_code'), 200);
  t.equal(attr(server, 'svc.tenant_id'), b.tenant_id, 'the tenant');
  t.equal(attr(server, 'oauth.client_id'), ex.client_id, 'the client');
  const sign = trace.find((s) => s.name === 'crypto signBatch')!;
  t.ok(sign && descends(trace, sign, server.spanId), 'the signing pool span is under the server span');
  t.same(trace.filter((s) => s.parentSpanId === sign.spanId).map((s) => s.name).sort(), ['pool work', 'queue wait'], 'queue wait and work apart');
  const redis = trace.filter((s) => s.name.startsWith('redis '));
  t.ok(redis.length >= 1, `${redis.length} Redis spans`);
  t.ok(redis.every((s) => descends(trace, s, server.spanId)), 'every Redis span is under the server span');
  const text = JSON.stringify(trace);
  for (const secret of [cc.access_token, issued.access_token, ex.client_secret]) t.notOk(text.includes(secret), 'no token or secret in any span');
});

t.test('a login step is traced without the address or the code', async (t) => {
  const email = uniqueEmail('trace');
  const p = parent();
  const gen = await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json', traceparent: p.header }, body: JSON.stringify({ email, client_id: b.clients.web.client_id }) });
  t.equal(gen.status, 200);
  const code = await codeFor(sink, email);
  const v = parent();
  const verify = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json', traceparent: v.header }, body: JSON.stringify({ email, code }) });
  t.equal(verify.status, 200);
  await waitFor(async () => traceOf(p.traceId).some((s) => s.kind === 2) && traceOf(v.traceId).some((s) => s.kind === 2), 10_000, 50);
  t.equal(traceOf(p.traceId).find((s) => s.kind === 2)!.name, 'POST /email-code/generate');
  t.ok(traceOf(p.traceId).some((s) => s.name.startsWith('redis ')), 'the code is kept in Redis, under the request');
  // The verify step's own work (code check and failure budgets, the user's sign-in, the session) is under its span too.
  const verifyServer = traceOf(v.traceId).find((s) => s.kind === 2)!;
  await waitFor(async () => traceOf(v.traceId).some((s) => attr(s, 'db.system.name') === 'postgresql'), 10_000, 50).catch(() => {});
  const verifySpans = traceOf(v.traceId);
  t.ok(verifySpans.some((s) => s.name.startsWith('redis ') && descends(verifySpans, s, verifyServer.spanId)), `Redis under the verify step (${verifySpans.map((s) => s.name).join(', ')})`);
  t.ok(verifySpans.some((s) => attr(s, 'db.system.name') === 'postgresql' && descends(verifySpans, s, verifyServer.spanId)), 'the sign-in\'s Postgres statements under the verify step');
  // The email job was added by the request and run by the email worker: the worker's span is in the same trace.
  await waitFor(async () => traceOf(p.traceId).some((s) => s.kind === 5 /* CONSUMER */), 10_000, 50);
  const generate = traceOf(p.traceId).find((s) => s.kind === 2)!;
  const consumer = traceOf(p.traceId).find((s) => s.kind === 5)!;
  t.match(consumer.name, /email/, `the email job's span (${consumer.name})`);
  t.ok(descends(traceOf(p.traceId), consumer, generate.spanId), 'under the request that added the job');
  const all = bodies.join('\n');
  t.notOk(all.includes(email), 'no address in any exported span');
  t.notOk(all.includes(code), 'no code in any exported span');
  t.notOk(all.includes(b.clients.web.client_secret), 'no client secret');
});

t.test('a revocation\'s writes are under the /revoke request: the Postgres record first, then the Redis key', async (t) => {
  const ex = b.clients.exchanger;
  const auth = basic(ex.client_id, ex.client_secret);
  const cc = await (await fetch(`${srv.url}/token`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials&scope=read' })).json() as { access_token: string };
  const p = parent();
  const res = await fetch(`${srv.url}/revoke`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded', traceparent: p.header }, body: new URLSearchParams({ token: cc.access_token }) });
  t.equal(res.status, 200);
  const found = () => traceOf(p.traceId);
  await waitFor(async () => found().some((s) => s.kind === 2) && found().some((s) => /^INSERT revocations/.test(s.name)) && found().some((s) => s.name.startsWith('redis ')), 10_000, 50).catch(() => {});
  const server = found().find((s) => s.kind === 2);
  t.equal(server?.name, 'POST /revoke');
  const insert = found().find((s) => /^INSERT revocations/.test(s.name));
  t.ok(insert && descends(found(), insert, server!.spanId), `the revocation record under the request (${found().map((s) => s.name).join(', ')})`);
  // Durable first: the Redis write that makes the revocation fast follows the record's insert. (Its span
  // may start a few microseconds before the insert's span is ended: the end is a callback of its own.)
  t.ok(insert !== undefined && found().some((s) => s.name.startsWith('redis ') && descends(found(), s, server!.spanId) && BigInt(s.startTimeUnixNano ?? 0) > BigInt(insert.startTimeUnixNano ?? 0)), 'the revocation key written under the request, after the record');
  const rs = b.clients.resource_server;
  const still = await (await fetch(`${srv.url}/introspect`, { method: 'POST', headers: { authorization: basic(rs.client_id, rs.client_secret), 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: cc.access_token }) })).json() as { active: boolean };
  t.equal(still.active, false, 'and the token is revoked');
  t.notOk(bodies.join('\n').includes(cc.access_token), 'no token in any exported span');
});

t.test('a statement run for a request gets a Postgres span without its values', async (t) => {
  const p = parent();
  const res = await fetch(`${srv.url}/api/admin/users?limit=5`, { headers: { authorization: `Bearer ${b.admin_access_token}`, traceparent: p.header } });
  t.equal(res.status, 200);
  // Spans of one request may reach the collector in different export batches: await the one checked.
  await waitFor(async () => traceOf(p.traceId).some((s) => attr(s, 'db.system.name') === 'postgresql' && /^SELECT users/.test(s.name)), 10_000, 50).catch(() => {});
  const pg = traceOf(p.traceId).filter((s) => attr(s, 'db.system.name') === 'postgresql');
  t.ok(pg.some((s) => /^SELECT users/.test(s.name)), pg.map((s) => s.name).join(', '));
  t.ok(pg.every((s) => !/'[^']*@/.test(String(attr(s, 'db.query.text')))), 'statement text only, with $n for values');
});

t.test('an admin change is one trace from the request through the outbox and the queue to the webhook receiver', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const worker = await startWebhookWorker(srv.config, createLogger('silent'), { relay: { pollMs: 50 } });
  t.teardown(() => worker.close());
  const admin = { authorization: `Bearer ${b.admin_access_token}`, 'content-type': 'application/json' };
  const hook = await fetch(`${srv.url}/api/admin/webhooks`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'traced', url: `${rx.url}/hook`, events: ['user.created'] }) });
  t.equal(hook.status, 201, await hook.clone().text());
  const p = parent();
  const email = uniqueEmail('traced-hook');
  const created = await fetch(`${srv.url}/api/admin/users`, { method: 'POST', headers: { ...admin, traceparent: p.header }, body: JSON.stringify({ email, name: 'T' }) });
  t.equal(created.status, 201);
  await waitFor(async () => rx.received.some((r) => r.body.includes('user.created') && String(r.headers.traceparent ?? '').includes(p.traceId)), 15_000, 50);
  const got = rx.received.find((r) => String(r.headers.traceparent ?? '').includes(p.traceId))!;
  const [, traceId, spanId] = String(got.headers.traceparent).split('-');
  t.equal(traceId, p.traceId, 'the receiver gets the trace id of the admin request');
  await waitFor(async () => traceOf(p.traceId).some((s) => s.spanId === spanId), 10_000, 50);
  const trace = traceOf(p.traceId);
  const server = trace.find((s) => s.kind === 2 && s.name === 'POST /api/admin/users')!;
  t.ok(server, 'the admin request\'s server span');
  const deliver = trace.find((s) => s.spanId === spanId)!;
  t.equal(deliver.name, 'webhook deliver', 'the receiver\'s traceparent names the delivery span');
  t.ok(descends(trace, deliver, server.spanId), 'the delivery span is under the admin request\'s span');
  const relay = trace.find((s) => s.name === 'outbox relay');
  t.ok(relay && descends(trace, relay, server.spanId), 'the relay queueing the delivery has its span in the same trace, under the request');
  t.equal(attr(deliver, 'http.response.status_code'), 200);
  t.notOk(bodies.join('\n').includes(email), 'no address in any exported span');
});
