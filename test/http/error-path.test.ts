import t from 'tap';
import { NotFound, RateLimited } from '../../src/errors.js';
import { bearerToken } from '../../src/http/bearer.js';
import { escapeHtml } from '../../src/http/html.js';
import { wantsJson } from '../../src/http/negotiate.js';
import { pageHeaders } from '../../src/http/pages.js';
import { HttpRequest } from '../../src/http/request.js';
import { Router } from '../../src/http/router.js';
import { HttpServer } from '../../src/http/server.js';
import type { Route } from '../../src/http/types.js';
import { createLogger } from '../../src/log.js';
import { failure } from '../../src/login/respond.js';
import { j } from '../helpers/http.js';

// One error path: the server picks the error page or the JSON error body by the request, for routes
// that serve pages; API routes always answer JSON. The error page carries the login pages' headers.
async function serve(routes: Route[], checkResponses = false) {
  const router = new Router();
  for (const r of routes) router.add(r);
  const server = new HttpServer(router, { host: '127.0.0.1', port: 0, bodyLimitBytes: 1024, maxInflight: 100, debugErrors: false, checkResponses, log: createLogger('silent') });
  const port = await server.listen();
  t.teardown(() => server.drain(100));
  return `http://127.0.0.1:${port}`;
}

const missing = () => Promise.reject(new NotFound('client_not_found', 'No <b>such</b> "app".'));
const page: Route = { method: 'GET', path: '/page', iface: 'oauth', html: true, handler: missing };
const pagePost: Route = { method: 'POST', path: '/page', iface: 'oauth', html: true, body: 'json', handler: missing };
const limitedPage: Route = { method: 'GET', path: '/limited', iface: 'public', html: true, handler: () => { throw new RateLimited(9); } };
const api: Route = { method: 'GET', path: '/api/thing', iface: 'admin', handler: missing };
const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

t.test('a page route answers a browser with the error page, with the login pages\' security headers', async (t) => {
  const url = await serve([page, limitedPage]);
  const res = await fetch(`${url}/page`, { headers: { accept: BROWSER } });
  t.equal(res.status, 404);
  t.match(res.headers.get('content-type'), /^text\/html; charset=utf-8/);
  for (const [k, v] of Object.entries(pageHeaders())) t.equal(res.headers.get(k), v, `${k} as on every page`);
  t.match(res.headers.get('x-request-id'), /^[0-9a-f-]{36}$/);
  const html = await res.text();
  t.match(html, /<p role="alert">No &lt;b&gt;such&lt;\/b&gt; &quot;app&quot;\.<\/p>/, 'the description, escaped');
  t.notMatch(html, /<script|<b>/);
  const limited = await fetch(`${url}/limited`, { headers: { accept: BROWSER } });
  t.equal(limited.status, 429);
  t.equal(limited.headers.get('retry-after'), '9', 'the error\'s own headers stay');
  t.match(limited.headers.get('content-security-policy'), /default-src 'none'/);
});

t.test('the same page route answers an API client in JSON', async (t) => {
  const url = await serve([page, pagePost]);
  for (const accept of ['application/json', 'application/json, text/plain, */*', 'text/html;q=0.5, application/json']) {
    const res = await fetch(`${url}/page`, { headers: { accept } });
    t.equal(res.status, 404, accept);
    t.equal(res.headers.get('content-type'), 'application/json', accept);
    t.equal(res.headers.get('cache-control'), 'no-store');
    t.same(await j(res), { error: 'client_not_found', error_description: 'No <b>such</b> "app".' }, accept);
  }
  const posted = await fetch(`${url}/page`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.equal(posted.headers.get('content-type'), 'application/json', 'a JSON body asks for JSON');
  for (const headers of <Array<Record<string, string>>>[{}, { accept: '*/*' }, { accept: 'text/html, application/json' }]) {
    const res = await fetch(`${url}/page`, { headers });
    t.match(res.headers.get('content-type'), /^text\/html/, `${JSON.stringify(headers)}: pages unless JSON is preferred`);
  }
});

t.test('an API route answers JSON even to a browser', async (t) => {
  const url = await serve([api]);
  const res = await fetch(`${url}/api/thing`, { headers: { accept: BROWSER } });
  t.equal(res.status, 404);
  t.equal(res.headers.get('content-type'), 'application/json');
  t.same(await j(res), { error: 'client_not_found', error_description: 'No <b>such</b> "app".', message: 'No <b>such</b> "app".' });
});

t.test('an error a login handler answers itself is the same page or body the server sends', async (t) => {
  const err = new NotFound('client_not_found', 'x');
  const asPage = failure(err, false);
  t.same(asPage.headers, pageHeaders());
  t.equal(asPage.status, 404);
  t.match(asPage.body, /<p role="alert">x<\/p>/);
  t.same(failure(err, true).body, { error: 'client_not_found', error_description: 'x' });
  t.throws(() => failure(new Error('bug'), true), /bug/, 'unexpected errors go to the server');
});

t.test('in test mode, replies are held to their documented schemas; pages pass', async (t) => {
  const ok: Route = {
    method: 'GET', path: '/ok', iface: 'oauth', html: true, doc: { summary: 'x', responses: { 200: 'login.logged-out' } },
    handler: (r) => (r.query === 'page' ? { type: 'text/html; charset=utf-8', body: '<p>hi</p>' }
      : r.query === 'text' ? { type: 'application/json', body: '{"logged_out":true,"extra":1}' }
        : r.query === 'error' ? failure(new NotFound(), true)
          : r.query === 'bad-error' ? { status: 400, body: { oops: true } }
            : { body: { logged_out: true } }),
  };
  const url = await serve([ok], true);
  t.equal((await fetch(`${url}/ok`)).status, 200);
  t.equal((await fetch(`${url}/ok?page`)).status, 200, 'a page is not a JSON reply');
  t.equal((await fetch(`${url}/ok?error`)).status, 404, 'the spec\'s error body');
  t.equal((await fetch(`${url}/ok?text`, { headers: { accept: 'application/json' } })).status, 500, 'JSON sent as text is checked too');
  t.equal((await fetch(`${url}/ok?bad-error`, { headers: { accept: 'application/json' } })).status, 500, 'an error body must be the spec\'s');
});

t.test('negotiation, bearer parsing and escaping, one function each', async (t) => {
  const req = (headers: Record<string, string>) => new HttpRequest('GET', '/', '', headers, 'r', undefined as never);
  t.equal(wantsJson(req({})), false);
  t.equal(wantsJson(req({ accept: BROWSER })), false);
  t.equal(wantsJson(req({ accept: 'application/json;q=0.9, text/html;q=0.8' })), true);
  t.equal(wantsJson(req({ accept: 'application/*' })), true, 'application/* ranks JSON above HTML, which it does not cover');
  t.equal(wantsJson(req({ accept: 'text/html;q=0, */*' })), true, 'HTML refused outright');
  t.equal(wantsJson(req({ 'content-type': 'application/json; charset=utf-8' })), true);
  t.equal(bearerToken(req({ authorization: 'Bearer abc.def-_~+/=' })), 'abc.def-_~+/=');
  t.equal(bearerToken(req({ authorization: 'bearer  abc' })), 'abc', 'the scheme is case-insensitive (RFC 9110 11.1)');
  for (const bad of ['Bearer', 'Bearer ', 'Bearer a b', 'Basic abc', 'Bearer a=b', 'Bearerabc']) t.equal(bearerToken(req({ authorization: bad })), undefined, bad);
  t.equal(bearerToken(req({})), undefined);
  t.equal(escapeHtml(`<a href="x" title='y'>&</a>`), '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;');
});
