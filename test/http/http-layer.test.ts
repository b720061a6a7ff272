import net from 'node:net';
import t from 'tap';
import { HttpServer } from '../../src/http/server.js';
import { Router } from '../../src/http/router.js';
import { parseCookies, parseForm, serializeCookie } from '../../src/http/request.js';
import { NotFound, RateLimited } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import type { Route } from '../../src/http/types.js';
import { j } from '../helpers/http.js';

// The HTTP layer alone: a real uWS server on loopback with a small route table of its own.
async function serve(routes: Route[], opts: { debugErrors?: boolean; bodyLimitBytes?: number; maxInflight?: number } = {}) {
  const router = new Router();
  for (const r of routes) router.add(r);
  const server = new HttpServer(router, {
    host: '127.0.0.1', port: 0, bodyLimitBytes: opts.bodyLimitBytes ?? 1024, maxInflight: opts.maxInflight ?? 100,
    debugErrors: opts.debugErrors ?? false, log: createLogger('silent'),
  });
  const port = await server.listen();
  t.teardown(() => server.drain(100));
  return { server, port, url: `http://127.0.0.1:${port}` };
}

const echo: Route = { method: 'POST', path: '/api/admin/echo', iface: 'admin', body: 'json', bodySchema: 'common.error', handler: (r) => ({ status: 201, body: r.data }) };
const oauthEcho: Route = { method: 'POST', path: '/oauth/echo', iface: 'oauth', body: 'form', handler: (r) => ({ body: r.data }) };
const oauthValidated: Route = { method: 'POST', path: '/oauth/strict', iface: 'oauth', body: 'json', bodySchema: 'common.error', handler: () => ({ body: {} }) };
const item: Route = { method: 'GET', path: '/api/admin/items/:id', iface: 'admin', handler: (r) => (r.params.id === 'missing' ? Promise.reject(new NotFound('user_not_found', 'No such user.')) : { body: { id: r.params.id } }) };
const itemDelete: Route = { method: 'DELETE', path: '/api/admin/items/:id', iface: 'admin', handler: () => ({ status: 204 }) };
const boom: Route = { method: 'GET', path: '/boom', iface: 'admin', handler: () => { throw new Error('secret internal detail'); } };
const limited: Route = { method: 'GET', path: '/limited', iface: 'admin', handler: () => { throw new RateLimited(7); } };
const cookie: Route = { method: 'GET', path: '/cookie', iface: 'public', handler: (r) => ({ body: r.cookies(), cookies: [serializeCookie('svc_session', 'a b', { secure: true, maxAge: 60 })] }) };

t.test('router matches exact and parameterised paths, 404 and 405 with Allow', async (t) => {
  const { url } = await serve([echo, item, itemDelete]);
  let res = await fetch(`${url}/api/admin/items/abc%20d`);
  t.equal(res.status, 200);
  t.same(await j(res), { id: 'abc d' });
  res = await fetch(`${url}/api/admin/items/abc`, { method: 'PATCH' });
  t.equal(res.status, 405);
  t.equal(res.headers.get('allow'), 'GET, DELETE');
  t.match(await j(res), { error: 'invalid_request' });
  res = await fetch(`${url}/api/admin/echo`);
  t.equal(res.status, 405);
  t.equal(res.headers.get('allow'), 'POST');
  res = await fetch(`${url}/api/admin/nothing-here`);
  t.equal(res.status, 404);
  const body = await j(res);
  t.same(Object.keys(body).sort(), ['error', 'error_description', 'message']);
  t.equal(body.error, 'not_found');
  res = await fetch(`${url}/api/admin/items/`);
  t.equal(res.status, 404, 'an empty parameter does not match');
  res = await fetch(`${url}/api/admin/items/missing`);
  t.equal(res.status, 404);
  t.equal((await j(res)).error, 'user_not_found');
});

t.test('X-Request-ID is echoed when well formed and generated otherwise, on success and error', async (t) => {
  const { url } = await serve([item]);
  let res = await fetch(`${url}/api/admin/items/1`, { headers: { 'x-request-id': 'abc-123.def' } });
  t.equal(res.headers.get('x-request-id'), 'abc-123.def');
  res = await fetch(`${url}/api/admin/items/1`, { headers: { 'x-request-id': 'bad id with spaces <script>' } });
  t.match(res.headers.get('x-request-id'), /^[0-9a-f-]{36}$/);
  res = await fetch(`${url}/nope`);
  t.match(res.headers.get('x-request-id'), /^[0-9a-f-]{36}$/);
  const a = (await fetch(`${url}/nope`)).headers.get('x-request-id');
  const b = (await fetch(`${url}/nope`)).headers.get('x-request-id');
  t.not(a, b, 'each request gets its own id');
});

t.test('JSON bodies: malformed is invalid_json, schema violations are 422 with details by field', async (t) => {
  const { url } = await serve([echo, oauthValidated]);
  let res = await fetch(`${url}/api/admin/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"error": ' });
  t.equal(res.status, 400);
  t.same(await j(res), { error: 'invalid_json', error_description: 'The request body is not valid JSON.', message: 'The request body is not valid JSON.' });
  res = await fetch(`${url}/api/admin/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: 5 }) });
  t.equal(res.status, 422);
  const body = await j(res);
  t.equal(body.error, 'validation_error');
  t.same(body.details, { error: ['must be string'], error_description: ['is required'] });
  res = await fetch(`${url}/api/admin/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: 'a', error_description: 'b' }) });
  t.equal(res.status, 201);
  t.same(await j(res), { error: 'a', error_description: 'b' });
  res = await fetch(`${url}/api/admin/echo`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
  t.equal(res.status, 400, 'a non-JSON content type is refused');
  res = await fetch(`${url}/oauth/strict`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.equal(res.status, 400, 'OAuth endpoints answer schema violations with invalid_request');
  const ob = await j(res);
  t.equal(ob.error, 'invalid_request');
  t.notOk('message' in ob, 'OAuth error bodies carry error and error_description');
});

t.test('form bodies: repeated keys become arrays, wrong content type is invalid_request', async (t) => {
  const { url } = await serve([oauthEcho]);
  let res = await fetch(`${url}/oauth/echo`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1&resource=x&resource=y&s=h%C3%A9+llo' });
  t.same(await j(res), { a: '1', resource: ['x', 'y'], s: 'hé llo' });
  res = await fetch(`${url}/oauth/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.equal(res.status, 400);
  t.equal((await j(res)).error, 'invalid_request');
  res = await fetch(`${url}/oauth/echo`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=%E0%A4%A' });
  t.equal(res.status, 400, 'bad percent-encoding is a client error, not a 500');
});

t.test('body limit: declared and streamed bodies over the limit get 413', async (t) => {
  const { url, port } = await serve([echo], { bodyLimitBytes: 1024 });
  const res = await fetch(`${url}/api/admin/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: 'x'.repeat(2000), error_description: 'y' }) });
  t.equal(res.status, 413);
  t.equal((await j(res)).error, 'invalid_request');
  // Chunked upload without Content-Length: the limit is enforced while streaming.
  const raw = await rawRequest(port, 'POST /api/admin/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n' +
    `800\r\n${'a'.repeat(0x800)}\r\n0\r\n\r\n`);
  t.match(raw, /^HTTP\/1\.1 413 /);
  const ok = await fetch(`${url}/api/admin/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: 'a', error_description: 'b' }) });
  t.equal(ok.status, 201, 'the server keeps serving after refusing a body');
});

t.test('a client that aborts mid-body does not break the server', async (t) => {
  const { url, port, server } = await serve([echo]);
  await new Promise<void>((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write('POST /api/admin/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"err');
      setTimeout(() => { s.destroy(); resolve(); }, 50);
    });
  });
  await new Promise((r) => setTimeout(r, 50));
  t.equal(server.inflightCount, 0, 'the aborted request released its in-flight slot');
  const res = await fetch(`${url}/api/admin/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"error":"a","error_description":"b"}' });
  t.equal(res.status, 201);
});

t.test('unexpected errors are 500 internal_error without internals; rate limits carry retry_after', async (t) => {
  const { url } = await serve([boom, limited]);
  let res = await fetch(`${url}/boom`);
  t.equal(res.status, 500);
  const text = await res.text();
  t.notMatch(text, /secret internal detail/);
  t.same(JSON.parse(text), { error: 'internal_error', error_description: 'An unexpected error occurred.', message: 'An unexpected error occurred.' });
  res = await fetch(`${url}/limited`);
  t.equal(res.status, 429);
  t.equal(res.headers.get('retry-after'), '7');
  t.same(await j(res), { error: 'rate_limit_exceeded', error_description: 'Too many requests.', message: 'Too many requests.', retry_after: 7 });
});

t.test('X-Debug adds a debug object only when debug errors are enabled (development)', async (t) => {
  const dev = await serve([echo], { debugErrors: true });
  const body = JSON.stringify({ error: 1, client_secret: 'hunter2' });
  let res = await fetch(`${dev.url}/api/admin/echo`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-debug': 'true' }, body });
  let json = await j(res);
  t.type(json.debug, 'object');
  t.type(json.debug.stack_trace, 'string');
  t.type(json.debug.timestamp, 'string');
  t.equal(json.debug.request_body.client_secret, '[redacted]', 'secrets in the echoed body are redacted');
  res = await fetch(`${dev.url}/api/admin/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  t.notOk('debug' in (await j(res)), 'no debug without the header');
  const prod = await serve([echo], { debugErrors: false });
  res = await fetch(`${prod.url}/api/admin/echo`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-debug': 'true' }, body });
  json = await j(res);
  t.notOk('debug' in json, 'no debug outside development');
});

t.test('cookies are parsed and set with safe attributes', async (t) => {
  const { url } = await serve([cookie]);
  const res = await fetch(`${url}/cookie`, { headers: { cookie: 'a=1; svc_session=x%20y; b="q"' } });
  t.same(await j(res), { a: '1', svc_session: 'x y', b: 'q' });
  t.equal(res.headers.get('set-cookie'), 'svc_session=a%20b; Path=/; Max-Age=60; HttpOnly; Secure; SameSite=Lax');
  t.same(parseCookies(undefined), {});
  t.same(parseForm('a&b=&c=1'), { a: '', b: '', c: '1' });
});

t.test('over the in-flight budget, requests are shed with a fast 503 and Retry-After', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => { release = r; });
  const slow: Route = { method: 'GET', path: '/slow', iface: 'public', handler: async () => { await gate; return { body: { ok: true } }; } };
  const { url } = await serve([slow], { maxInflight: 2 });
  const first = [fetch(`${url}/slow`), fetch(`${url}/slow`)];
  await new Promise((r) => setTimeout(r, 50));
  const shed = await fetch(`${url}/slow`);
  t.equal(shed.status, 503);
  t.equal(shed.headers.get('retry-after'), '1');
  t.equal((await j(shed)).error, 'service_unavailable');
  release();
  for (const r of await Promise.all(first)) t.equal(r.status, 200);
});

t.test('drain waits for in-flight requests, then stops accepting', async (t) => {
  const slow: Route = { method: 'GET', path: '/slow', iface: 'public', handler: async () => { await new Promise((r) => setTimeout(r, 300)); return { body: { done: true } }; } };
  const { url, server } = await serve([slow]);
  const pending = fetch(`${url}/slow`);
  await new Promise((r) => setTimeout(r, 50));
  const drained = server.drain(5000);
  const res = await pending;
  t.equal(res.status, 200);
  t.same(await j(res), { done: true });
  t.equal(await drained, true);
  await t.rejects(fetch(`${url}/slow`), 'no longer accepting');
});

function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(text));
    let out = '';
    s.on('data', (d) => { out += d.toString(); if (out.includes('\r\n\r\n')) { s.destroy(); resolve(out); } });
    s.on('error', reject);
    s.setTimeout(3000, () => { s.destroy(); resolve(out); });
  });
}
