import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import { adminOf } from '../admin/helpers.js';

// Issue 21 item 16: login, consent and email-code routes answer JSON errors to API clients (JSON body or
// Accept: application/json); admin routes check credentials before the body.
const srv = await startTestServer();
t.teardown(() => srv.close());
const A = await adminOf(srv, ['admin:*'], 'neg');

const isJsonError = async (t: any, res: Response, what: string) => {
  t.match(res.headers.get('content-type') ?? '', /^application\/json/, `${what}: JSON`);
  const body = (await res.json()) as any;
  t.type(body.error, 'string', `${what}: spec error body`);
  t.ok(res.headers.get('x-request-id'), `${what}: X-Request-ID`);
  return body;
};

t.test('email-code routes answer JSON errors to JSON clients', async (t) => {
  const json = { 'content-type': 'application/json', accept: 'application/json' };
  let res = await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: json, body: JSON.stringify({ email: 'x@example.com', client_id: 'nope' }) });
  t.ok(res.status >= 400 && res.status < 500, `generate ${res.status}`);
  await isJsonError(t, res, 'generate unknown client');
  res = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: json, body: JSON.stringify({ email: 'x@example.com', code: '000000' }) });
  t.equal(res.status, 400);
  await isJsonError(t, res, 'verify wrong code');
  res = await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: json, body: '{not json' });
  await isJsonError(t, res, 'generate malformed');
});

t.test('authorize, resume and consent answer JSON errors to API clients', async (t) => {
  let res = await fetch(`${srv.url}/authorize?client_id=nope&response_type=code&scope=openid`, { headers: { accept: 'application/json' } });
  t.ok(res.status >= 400 && res.status < 500);
  await isJsonError(t, res, 'authorize unknown client');
  res = await fetch(`${srv.url}/authorize/resume?interaction=nope`, { headers: { accept: 'application/json' } });
  t.ok(res.status >= 400 && res.status < 500);
  await isJsonError(t, res, 'resume unknown interaction');
  res = await fetch(`${srv.url}/authorize/consent`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ interaction: 'nope', decision: 'allow' }) });
  t.ok(res.status >= 400 && res.status < 500);
  await isJsonError(t, res, 'consent unknown interaction');
  // A form post from a client that asks for JSON gets JSON too.
  const form = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  res = await fetch(`${srv.url}/authorize/consent`, { method: 'POST', headers: form, body: 'interaction=nope&decision=allow' });
  t.ok(res.status >= 400 && res.status < 500);
  await isJsonError(t, res, 'consent form, Accept JSON');
  res = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: form, body: 'email=x%40example.com&code=000000' });
  t.ok(res.status >= 400 && res.status < 500, `verify form ${res.status}`);
  await isJsonError(t, res, 'verify form, Accept JSON');
  // A browser still gets the page.
  res = await fetch(`${srv.url}/authorize?client_id=nope&response_type=code&scope=openid`, { headers: { accept: 'text/html' } });
  t.match(res.headers.get('content-type') ?? '', /text\/html/);
});

t.test('admin routes: credentials before the body', async (t) => {
  for (const [method, path] of [['POST', '/api/admin/users'], ['PUT', '/api/admin/roles/x'], ['POST', '/api/admin/webhooks']]) {
    const res = await fetch(`${srv.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ bogus: ['\u0000'], email: 5 }) });
    t.equal(res.status, 401, `${method} ${path} unauthenticated with a bad body is 401`);
    const malformed = await fetch(`${srv.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: '{nope' });
    t.equal(malformed.status, 401, `${method} ${path} unauthenticated with malformed JSON is 401`);
  }
  const authed = await A.call('POST', '/api/admin/users', { email: 5 });
  t.equal(authed.status, 422, 'with credentials the body is then validated');
});
