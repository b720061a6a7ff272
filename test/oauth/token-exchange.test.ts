import t from 'tap';
import { j } from '../helpers/http.js';
import { claims, tamperSignature } from '../helpers/jwt.js';
import { PrivateRedis } from '../helpers/processes.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';
import type { BootstrapResult } from '../../src/bootstrap.js';

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const AT = 'urn:ietf:params:oauth:token-type:access_token';

let srv: TestServer;
let b: BootstrapResult;
t.before(async () => {
  srv = await startTestServer();
  b = await setupTenant(srv, 'exchange');
});
t.teardown(() => srv.close());

async function subjectToken(scope = 'read write'): Promise<string> {
  const res = await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials', scope });
  return (await j(res)).access_token;
}
function exchange(form: Record<string, string | string[]>, client: { client_id: string; client_secret: string } = b.clients.exchanger) {
  return postForm(`${srv.url}/token`, client, { grant_type: EXCHANGE, subject_token_type: AT, ...form });
}

t.test('a valid subject token is exchanged for a token for the requested audience', async (t) => {
  const subject = await subjectToken();
  const res = await exchange({ subject_token: subject, audience: b.clients.resource_server.audience, scope: 'read' });
  t.equal(res.status, 200);
  t.equal(res.headers.get('cache-control'), 'no-store');
  const body = await j(res);
  t.same(Object.keys(body).sort(), ['access_token', 'expires_in', 'issued_token_type', 'scope', 'token_type']);
  t.equal(body.issued_token_type, AT);
  t.equal(body.token_type, 'Bearer');
  t.equal(body.scope, 'read');
  const c = claims(body.access_token);
  t.equal(c.aud, b.clients.resource_server.audience);
  t.equal(c.sub, claims(subject).sub);
  t.equal(c.tenant, b.tenant_id);
  t.match(c.jti, /^g\d+:local:\d+:[A-Za-z0-9_-]+$/, 'jti in the spec format');
  t.notOk(c.act, 'no act claim without an actor token');
});

t.test('an actor token adds act, nesting the act the subject already carries', async (t) => {
  const subject = await subjectToken();
  const actor = await subjectToken();
  const first = await j(await exchange({ subject_token: subject, actor_token: actor, actor_token_type: AT }));
  t.same(claims(first.access_token).act, { sub: claims(actor).sub, client_id: b.clients.exchanger.client_id });
  // Exchange the delegated token again with another actor: the previous act nests beneath the new one.
  const second = await j(await exchange({ subject_token: first.access_token, actor_token: actor, actor_token_type: AT }));
  t.same(claims(second.access_token).act, { sub: claims(actor).sub, client_id: b.clients.exchanger.client_id, act: claims(first.access_token).act });
  const res = await exchange({ subject_token: subject, actor_token: actor });
  t.equal(res.status, 400, 'actor_token without actor_token_type');
  t.equal((await j(res)).error, 'invalid_request');
});

t.test('expired, bad-signature and revoked subject tokens are rejected with 400 and an error body', async (t) => {
  const expired = (await srv.deps.tokens.accessTokens.issue({ tenant: b.tenant_id, sub: 'u1', clientId: b.clients.exchanger.client_id, aud: 'x', scope: 'read', ttlSeconds: -60 })).token;
  let res = await exchange({ subject_token: expired });
  t.equal(res.status, 400);
  t.same(await j(res), { error: 'invalid_grant', error_description: 'The subject token has expired.' });

  res = await exchange({ subject_token: tamperSignature(await subjectToken()) });
  t.equal(res.status, 400);
  t.same(await j(res), { error: 'invalid_grant', error_description: 'The subject token has an invalid signature.' });

  const revoked = await subjectToken();
  t.equal((await postForm(`${srv.url}/revoke`, b.clients.exchanger, { token: revoked })).status, 200);
  res = await exchange({ subject_token: revoked });
  t.equal(res.status, 400);
  t.same(await j(res), { error: 'invalid_grant', error_description: 'The subject token has been revoked.' });

  res = await exchange({ subject_token: await subjectToken(), actor_token: tamperSignature(await subjectToken()), actor_token_type: AT });
  t.equal(res.status, 400, 'a bad actor token is rejected too');
  t.match((await j(res)).error_description, /actor token has an invalid signature/);
});

t.test('subject tokens of another tenant are rejected', async (t) => {
  const other = await setupTenant(srv, 'exchange-other');
  const foreign = (await j(await postForm(`${srv.url}/token`, other.clients.exchanger, { grant_type: 'client_credentials' }))).access_token;
  const res = await exchange({ subject_token: foreign });
  t.equal(res.status, 400);
  t.same(await j(res), { error: 'invalid_grant', error_description: 'The subject token belongs to another tenant.' });
});

t.test('audience and resource must be allowed for the client (invalid_target)', async (t) => {
  const subject = await subjectToken();
  let res = await exchange({ subject_token: subject, audience: 'https://elsewhere.example' });
  t.equal(res.status, 400);
  t.equal((await j(res)).error, 'invalid_target');
  res = await exchange({ subject_token: subject, resource: ['https://api.svc.local', 'https://other.example/'] });
  t.equal((await j(res)).error, 'invalid_target', 'every resource must be allowed');
  res = await exchange({ subject_token: subject, resource: 'https://api.svc.local' });
  t.equal(res.status, 200);
  const c = claims((await j(res)).access_token);
  t.equal(c.resource, 'https://api.svc.local', 'resource is carried in the token');
});

t.test('scope is narrowed to the intersection of requested, subject and client scopes', async (t) => {
  const subject = await subjectToken('read');
  let body = await j(await exchange({ subject_token: subject, scope: 'read write admin' }));
  t.equal(body.scope, 'read', 'write is not in the subject token, admin not allowed to the client');
  body = await j(await exchange({ subject_token: subject }));
  t.equal(body.scope, 'read', 'without a requested scope the subject token scope carries over');
  const res = await exchange({ subject_token: subject, scope: 'write' });
  t.equal(res.status, 400);
  t.equal((await j(res)).error, 'invalid_scope');
});

t.test('client authentication and grant permission are enforced', async (t) => {
  const subject = await subjectToken();
  let res = await exchange({ subject_token: subject }, { client_id: b.clients.exchanger.client_id, client_secret: 'wrong' });
  t.equal(res.status, 401);
  t.equal((await j(res)).error, 'invalid_client');
  t.match(res.headers.get('www-authenticate'), /^Basic/);
  res = await exchange({ subject_token: subject }, b.clients.resource_server);
  t.equal(res.status, 400);
  t.equal((await j(res)).error, 'unauthorized_client', 'a client without the grant may not exchange');
  res = await exchange({ subject_token_type: 'urn:example:unknown', subject_token: subject });
  t.equal((await j(res)).error, 'invalid_request');
  res = await exchange({});
  t.equal(res.status, 400);
  t.same(await j(res), { error: 'invalid_request', error_description: 'The subject_token parameter is required.' });
  res = await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'password' });
  t.equal((await j(res)).error, 'unsupported_grant_type');
});

t.test('fail closed: with Redis unreadable no token is issued from a subject token', async (t) => {
  const redis = new PrivateRedis();
  await redis.start();
  const s2 = await startTestServer({ REDIS_URL: redis.url });
  t.teardown(async () => { await s2.close(); await redis.destroy(); });
  const b2 = await setupTenant(s2, 'exchange-redis');
  const subject = (await j(await postForm(`${s2.url}/token`, b2.clients.exchanger, { grant_type: 'client_credentials' }))).access_token;
  t.equal((await postForm(`${s2.url}/token`, b2.clients.exchanger, { grant_type: EXCHANGE, subject_token_type: AT, subject_token: subject })).status, 200);
  await redis.stop();
  const res = await postForm(`${s2.url}/token`, b2.clients.exchanger, { grant_type: EXCHANGE, subject_token_type: AT, subject_token: subject });
  t.equal(res.status, 503);
  const body = await j(res);
  t.equal(body.error, 'service_unavailable');
  t.notOk(body.access_token);
  t.ok(res.headers.get('retry-after'));
});
