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
