import t from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import { redactSecrets } from '../../src/http/server.js';
import { startTestServer } from '../helpers/server.js';

// Issue 21 item 18: X-Debug never echoes private JWK members or secrets, at any depth.
t.test('private JWK members are redacted wherever a JWK appears', async (t) => {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'jwk' });
  const out: any = redactSecrets({ publicJwk: jwk, jwks: { keys: [rsa, { kty: 'oct', k: 'c2VjcmV0' }] }, client_secret: 's', nested: { secret: 'x' } }, 0);
  t.equal(out.publicJwk.d, '[redacted]');
  t.equal(out.publicJwk.x, jwk.x, 'public members stay');
  for (const m of ['d', 'p', 'q', 'dp', 'dq', 'qi']) t.equal(out.jwks.keys[0][m], '[redacted]', m);
  t.equal(out.jwks.keys[0].n, rsa.n);
  t.equal(out.jwks.keys[1].k, '[redacted]');
  t.equal(out.client_secret, '[redacted]');
  t.equal(out.nested.secret, '[redacted]');
  const device: any = redactSecrets({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: 'dc', user_code: 'BCDF-GHJK' }, 0);
  t.same(device, { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: '[redacted]', user_code: '[redacted]' }, 'device and user codes (RFC 8628) too');
});

t.test('over HTTP in development: the refused body is echoed without key material', async (t) => {
  const srv = await startTestServer({ NODE_ENV: 'development' });
  t.teardown(() => srv.close());
  const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
  const r = await fetch(`${srv.url}/api/admin/clients`, { method: 'POST', headers: { 'x-debug': 'true', 'content-type': 'application/json', authorization: 'Bearer nope' }, body: JSON.stringify({ jwks: { keys: [jwk] } }) });
  const body = await r.text();
  t.equal(r.status, 401);
  t.match(body, /request_body/);
  t.notOk(body.includes(String(jwk.d)), 'the private scalar is not in the answer');
});

// Issue 29 item 6: a key sent as JSON text in a string field (publicJwkJson) was echoed whole, "d" included.
t.test('private JWK members inside JSON text of string fields are redacted too', async (t) => {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
  const out: any = redactSecrets({ publicJwkJson: JSON.stringify(jwk), deep: [{ jwks: JSON.stringify({ keys: [jwk] }) }], name: 'plain', notJson: '{"d":' + JSON.stringify(jwk.d) }, 0);
  t.notOk(JSON.stringify(out).includes(String(jwk.d)), 'd appears nowhere');
  t.equal(JSON.parse(out.publicJwkJson).d, '[redacted]');
  t.equal(JSON.parse(out.publicJwkJson).x, jwk.x, 'public members stay');
  t.equal(JSON.parse(out.deep[0].jwks).keys[0].d, '[redacted]');
  t.equal(out.name, 'plain');
  t.equal(out.notJson, '[unparseable]', 'JSON-looking text that does not parse is withheld');
  const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  t.equal((redactSecrets({ note: pem }, 0) as any).note, '[redacted]', 'a PEM private key in any field');
});

t.test('over HTTP in development: publicJwkJson on POST .../credentials is echoed without "d"', async (t) => {
  const srv = await startTestServer({ NODE_ENV: 'development' });
  t.teardown(() => srv.close());
  const { adminOf } = await import('../admin/helpers.js');
  const A = await adminOf(srv, ['admin:*'], 'dbg');
  const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
  for (const [auth, path] of [[`Bearer ${A.token}`, '/api/admin/machine-access/principals/mp_none/credentials'], ['Bearer nope', '/api/admin/machine-access/principals/mp_none/credentials']] as const) {
    const r = await fetch(`${srv.url}${path}`, { method: 'POST', headers: { 'x-debug': 'true', 'content-type': 'application/json', authorization: auth }, body: JSON.stringify({ publicJwkJson: JSON.stringify(jwk), alg: 'ES256', displayName: 'k' }) });
    const body = await r.text();
    t.ok(r.status >= 400, `${auth.slice(0, 12)}: ${r.status}`);
    const echoed = JSON.parse(body).debug?.request_body;
    t.type(echoed?.publicJwkJson, 'string', 'the field is echoed');
    t.notOk(body.includes(String(jwk.d)), 'the private scalar is not in the answer');
    t.equal(JSON.parse(echoed.publicJwkJson).x, jwk.x);
  }
});
