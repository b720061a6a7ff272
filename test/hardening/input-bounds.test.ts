import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import { setupTenant } from '../helpers/tokens.js';
import { adminOf } from '../admin/helpers.js';

// Issue 21 item 14: input that used to reach Postgres or V8 unchecked (NUL bytes, numbers beyond int64,
// deep nesting in free-form fields) is refused by the validation layer with a 4xx, never a 500.
const srv = await startTestServer();
t.teardown(() => srv.close());
const A = await adminOf(srv, ['admin:*'], 'ib');
const boot = await setupTenant(srv, 'ib-oauth');

const nested = (depth: number): unknown => { let v: unknown = 1; for (let i = 0; i < depth; i++) v = { a: v }; return v; };
/** JSON text nested `depth` objects deep (JSON.stringify itself would run out of stack). */
const deepText = (depth: number): string => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
const raw = (method: string, path: string, body: string) => fetch(srv.url + path, { method, headers: { authorization: `Bearer ${A.token}`, 'content-type': 'application/json' }, body });

t.test('NUL in path parameters names nothing: 404 on every {id} route', async (t) => {
  for (const p of ['/api/admin/users/%00', '/api/admin/roles/a%00b', '/api/admin/clients/%00', '/api/admin/check-api-keys/%00',
    '/api/admin/admin-policies/%00', '/api/admin/webhooks/%00', '/api/admin/machine-access/principals/%00', '/api/admin/admin-audit-log/%00']) {
    const r = await A.call('GET', p);
    t.equal(r.status, 404, p);
    t.equal(r.body.error, 'not_found');
  }
  t.equal((await A.call('PUT', '/api/admin/users/%00', { name: 'x' })).status, 404);
});

t.test('NUL in body strings and query filters is 422 naming the field', async (t) => {
  const r = await A.call('POST', '/api/admin/users', { email: 'a\u0000@example.com', name: 'x' });
  t.equal(r.status, 422);
  t.equal(r.body.error, 'validation_error');
  t.ok(r.body.details.email, 'names the field');
  const role = await A.call('POST', '/api/admin/roles', { name: 'r\u0000', permissions: [] });
  t.equal(role.status, 422);
  const q = await A.call('GET', '/api/admin/users?email=%00');
  t.equal(q.status, 422);
  t.equal((await A.call('GET', '/api/admin/admin-audit-log?action=%00')).status, 422);
});

t.test('NUL on unauthenticated and OAuth endpoints is a 4xx', async (t) => {
  const authz = await fetch(`${srv.url}/authorize?client_id=%00&response_type=code`, { headers: { accept: 'application/json' } });
  t.ok(authz.status >= 400 && authz.status < 500, `authorize ${authz.status}`);
  const gen = await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'x@example.com', client_id: '\u0000' }) });
  t.ok(gen.status >= 400 && gen.status < 500, `email-code ${gen.status}`);
  const tok = await fetch(`${srv.url}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials&client_id=%00&client_secret=x' });
  t.equal(tok.status, 400, 'form with NUL is 400 on OAuth');
  t.equal(((await tok.json()) as any).error, 'invalid_request');
  const check = await fetch(`${srv.url}/api/check`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer svc_ck_x' }, body: JSON.stringify({ user_id: '\u0000', permission: 'a' }) });
  t.ok(check.status >= 400 && check.status < 500, `check ${check.status}`);
  t.ok(boot.tenant_id);
});

t.test('numbers out of range are 422', async (t) => {
  for (const p of ['/api/admin/users?limit=1e400', '/api/admin/roles?limit=1e400', '/api/admin/check-api-keys?page=1e20',
    '/api/admin/admin-audit-log?since=1e20', '/api/admin/admin-audit-log?until=99999999999999999999', '/api/admin/machine-access/principals?page=100000000000000000000']) {
    const r = await A.call('GET', p);
    t.equal(r.status, 422, p);
  }
  const client: any = (await A.call('POST', '/api/admin/clients', { name: 'ib client', grant_types: ['client_credentials'] })).body;
  const key = await A.call('POST', '/api/admin/check-api-keys', { name: 'k', client_id: client.client_id, expires_at: 1e20 });
  t.equal(key.status, 422, 'expires_at 1e20');
});

t.test('deep nesting inside free-form fields is 422, not 500', async (t) => {
  const u = await raw('POST', '/api/admin/users', `{"email":"deep@example.com","metadata":${deepText(10_000)}}`);
  t.equal(u.status, 422);
  t.equal(((await u.json()) as any).error, 'validation_error');
  const ok = await A.call('POST', '/api/admin/users', { email: 'shallow@example.com', metadata: nested(8) as any });
  t.equal(ok.status, 201, 'ordinary nesting still works');
  const c = await raw('POST', '/api/admin/clients', `{"name":"deep","grant_types":["client_credentials"],"jwks":{"keys":[${deepText(5000)}]}}`);
  t.ok(c.status === 422 || c.status === 400, `client jwks ${c.status}`);
  // A body nested past what the parser can hold is malformed JSON, answered 400.
  const huge = await fetch(`${srv.url}/api/admin/users`, { method: 'POST', headers: { authorization: `Bearer ${A.token}`, 'content-type': 'application/json' }, body: '['.repeat(200_000) });
  t.ok(huge.status === 400 || huge.status === 413, `huge nesting ${huge.status}`);
});

// Issue 29 item 5: a lone UTF-16 surrogate (JSON's \ud800 escape, high or low, unpaired) parsed into a
// string used to reach Postgres, which refuses it in the audit entry's JSON: 500 internal_error.
const LONE = ['\\ud800', '\\udbff', '\\udc00', '\\udfff'];

t.test('lone surrogates in admin JSON bodies are 422 naming the field, high and low, in values and keys', async (t) => {
  for (const s of LONE) {
    const cases: Array<[string, string, string, string]> = [
      ['POST', '/api/admin/users', `{"email":"lone@example.com","name":"a${s}b"}`, 'name'],
      ['POST', '/api/admin/users', `{"email":"lone${s}@example.com"}`, 'email'],
      ['POST', '/api/admin/users', `{"email":"lone2@example.com","metadata":{"k${s}":1}}`, `metadata.k${s}`],
      ['POST', '/api/admin/roles', `{"name":"r${s}","permissions":[]}`, 'name'],
      ['POST', '/api/admin/clients', `{"name":"c","grant_types":["client_credentials"],"scopes":["a${s}"]}`, 'scopes.0'],
      ['POST', '/api/admin/machine-access/principals', `{"displayName":"${s}","principalType":"ci","permissions":[]}`, 'displayName'],
      ['POST', '/api/admin/admin-policies', `{"name":"p${s}","priority":1,"effect":"deny","conditions":[],"resource_types":["users"],"actions":["read"]}`, 'name'],
    ];
    for (const [method, path, body, field] of cases) {
      const r = await raw(method, path, body);
      const out = (await r.json()) as any;
      t.equal(r.status, 422, `${method} ${path} ${body}`);
      t.equal(out.error, 'validation_error');
      t.ok(out.details?.[field], `names ${field}: ${JSON.stringify(out.details)}`);
    }
  }
  const pair = await A.call('POST', '/api/admin/users', { email: 'pair@example.com', name: 'smile \ud83d\ude00' });
  t.equal(pair.status, 201, 'a surrogate pair (an emoji) is ordinary text');
  t.equal(pair.body.name, 'smile \u{1F600}');
});

t.test('a lone surrogate inside JSON text of a string field (publicJwkJson) is 422 too', async (t) => {
  const p: any = (await A.call('POST', '/api/admin/machine-access/principals', { displayName: 'lone bot', principalType: 'ci', permissions: [] })).body;
  const { generateKeyPairSync } = await import('node:crypto');
  const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
  for (const s of LONE) {
    // The escape sits inside the inner JSON text: the outer body is well formed, the parsed kid is not.
    const inner = JSON.stringify({ ...jwk, kid: 'KID' }).replace('KID', s);
    const r = await raw('POST', `/api/admin/machine-access/principals/${p.id}/credentials`, JSON.stringify({ publicJwkJson: inner, alg: 'ES256', displayName: 'k' }));
    const out = (await r.json()) as any;
    t.equal(r.status, 422, `kid ${s}: ${JSON.stringify(out)}`);
    t.ok(out.details?.['publicJwkJson.kid'], 'names the field inside the JSON text');
  }
  const ok = await A.call('POST', `/api/admin/machine-access/principals/${p.id}/credentials`, { publicJwkJson: JSON.stringify(jwk), alg: 'ES256', displayName: 'k' });
  t.equal(ok.status, 201, 'the same key without it is accepted');
});

t.test('lone surrogates on OAuth and public endpoints are a 4xx with the error body, never 500', async (t) => {
  for (const s of LONE) {
    // A form can only carry one percent-encoded (CESU-8 style), which is not UTF-8: 400 invalid_request.
    const enc = encodeURIComponent('\ud83d\ude00').replace(/%F0%9F%98%80/, s === '\\ud800' ? '%ED%A0%80' : s === '\\udbff' ? '%ED%AF%BF' : s === '\\udc00' ? '%ED%B0%80' : '%ED%BF%BF');
    const tok = await fetch(`${srv.url}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `grant_type=client_credentials&client_id=a${enc}&client_secret=x` });
    t.equal(tok.status, 400, `form ${enc}`);
    t.equal(((await tok.json()) as any).error, 'invalid_request');
    const json = await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: `{"email":"x@example.com","client_id":"a${s}"}` });
    const jb = (await json.json()) as any;
    t.ok(json.status === 400 || json.status === 422, `email-code ${s}: ${json.status} ${JSON.stringify(jb)}`);
    t.type(jb.error, 'string');
    const check = await fetch(`${srv.url}/api/check`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer svc_ck_x' }, body: `{"user_id":"${s}","permission":"a"}` });
    t.ok(check.status >= 400 && check.status < 500, `check ${check.status}`);
    // Logged-in admin, lone surrogate in a query: a query is percent-decoded as UTF-8, so it arrives as U+FFFD.
    const q = await A.call('GET', `/api/admin/users?email=${enc}`);
    t.ok(q.status < 500, `query ${enc}: ${q.status}`);
  }
});

t.test('a cursor carrying NUL or a lone surrogate is 422, not a query Postgres refuses', async (t) => {
  for (const id of ['\u0000', 'a\ud800', '\udc00']) {
    const cursor = Buffer.from(JSON.stringify([Date.now(), id])).toString('base64url');
    for (const path of ['/api/admin/users', '/api/admin/roles', '/api/admin/clients', '/api/admin/admin-audit-log']) {
      const r = await A.call('GET', `${path}?cursor=${cursor}`);
      t.equal(r.status, 422, `${path} ${JSON.stringify(id)}: ${JSON.stringify(r.body)}`);
      t.ok(r.body.details?.cursor, 'names cursor');
    }
  }
});
