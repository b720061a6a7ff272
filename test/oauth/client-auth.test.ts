import { generateKeyPairSync, randomUUID } from 'node:crypto';
import t from 'tap';
import { createClient } from '../../src/clients/create.js';
import { GRANT } from '../../src/clients/model.js';
import { j } from '../helpers/http.js';
import { mintJwt } from '../helpers/jwt.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { setupTenant } from '../helpers/tokens.js';
import type { BootstrapResult } from '../../src/bootstrap.js';

let srv: TestServer;
let b: BootstrapResult;
t.before(async () => {
  srv = await startTestServer();
  b = await setupTenant(srv, 'clientauth');
});
t.teardown(() => srv.close());

const form = (o: Record<string, string>) => new URLSearchParams(o).toString();
const post = (body: string, headers: Record<string, string> = {}) =>
  fetch(`${srv.url}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body });

t.test('client_secret_basic with form-encoded credentials, and client_secret_post', async (t) => {
  const { client_id, client_secret } = b.clients.exchanger;
  let res = await post(form({ grant_type: 'client_credentials' }), { authorization: `Basic ${Buffer.from(`${encodeURIComponent(client_id)}:${encodeURIComponent(client_secret)}`).toString('base64')}` });
  t.equal(res.status, 200);
  const body = await j(res);
  t.equal(body.token_type, 'Bearer');
  t.equal(body.expires_in, 900);
  t.equal(body.scope, 'read write');
  res = await post(form({ grant_type: 'client_credentials', client_id, client_secret }));
  t.equal(res.status, 200, 'client_secret_post');
  res = await post(form({ grant_type: 'client_credentials', client_id, client_secret }), { authorization: `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString('base64')}` });
  t.equal(res.status, 400, 'two methods at once are refused');
  t.equal((await j(res)).error, 'invalid_request');
});

t.test('failures are invalid_client 401 with WWW-Authenticate, the same for unknown clients and wrong secrets', async (t) => {
  for (const auth of [`Basic ${Buffer.from(`${b.clients.exchanger.client_id}:wrong`).toString('base64')}`, `Basic ${Buffer.from('nobody:secret').toString('base64')}`, 'Basic !!!', undefined]) {
    const res = await post(form({ grant_type: 'client_credentials' }), auth ? { authorization: auth } : {});
    t.equal(res.status, 401);
    t.match(res.headers.get('www-authenticate'), /^Basic realm="svc"/);
    t.equal((await j(res)).error, 'invalid_client');
  }
});

t.test('client_credentials: scope narrowing, audience checks, unauthorized grant', async (t) => {
  const { client_id, client_secret } = b.clients.exchanger;
  let res = await post(form({ grant_type: 'client_credentials', client_id, client_secret, scope: 'read delete' }));
  t.equal((await j(res)).scope, 'read');
  res = await post(form({ grant_type: 'client_credentials', client_id, client_secret, scope: 'delete' }));
  t.equal(res.status, 400);
  t.equal((await j(res)).error, 'invalid_scope');
  res = await post(form({ grant_type: 'client_credentials', client_id, client_secret, audience: 'https://nope.example' }));
  t.equal((await j(res)).error, 'invalid_target');
  res = await post(form({ grant_type: 'refresh_token', client_id, client_secret, refresh_token: 'x' }));
  t.equal((await j(res)).error, 'unauthorized_client');
  res = await post('grant_type=client_credentials&scope=a&scope=b', { authorization: `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString('base64')}` });
  t.equal(res.status, 400, 'a repeated single-valued parameter is invalid_request');
  t.equal((await j(res)).error, 'invalid_request');
  res = await fetch(`${srv.url}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.equal(res.status, 400, 'the token endpoint takes a form');
});

for (const alg of ['ES256', 'PS256', 'RS256'] as const) {
  t.test(`private_key_jwt with ${alg}: accepted once, replay and bad signature refused`, async (t) => {
    const pair = alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = { ...pair.publicKey.export({ format: 'jwk' }), kid: `k-${alg}`, alg };
    const { client } = await createClient(srv.deps.sql, srv.deps.tokens.secretKey, {
      tenantId: b.tenant_id, name: `pkjwt ${alg}`, authMethod: 'private_key_jwt', grantTypes: [GRANT.clientCredentials], scopes: ['read'], jwks: { keys: [jwk] },
    });
    const assertion = (overrides: Record<string, unknown> = {}, key = pair.privateKey) => {
      const now = Math.floor(Date.now() / 1000);
      return mintJwt(key, { alg, kid: jwk.kid, typ: 'JWT' }, { iss: client.clientId, sub: client.clientId, aud: `${srv.config.issuer}/token`, iat: now, exp: now + 60, jti: randomUUID(), ...overrides });
    };
    const body = (a: string) => form({ grant_type: 'client_credentials', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: a });
    const a1 = await assertion();
    let res = await post(body(a1));
    t.equal(res.status, 200);
    t.equal((await j(res)).scope, 'read');
    res = await post(body(a1));
    t.equal(res.status, 401, 'the same assertion cannot be used twice');
    const other = alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('rsa', { modulusLength: 2048 });
    res = await post(body(await assertion({}, other.privateKey)));
    t.equal(res.status, 401, 'signed by a key that is not registered');
    res = await post(body(await assertion({ exp: Math.floor(Date.now() / 1000) - 30 })));
    t.equal(res.status, 401, 'expired assertion');
    res = await post(body(await assertion({ aud: 'https://someone-else.example/token' })));
    t.equal(res.status, 401, 'wrong audience');
    t.equal((await j(res)).error, 'invalid_client');
  });
}
