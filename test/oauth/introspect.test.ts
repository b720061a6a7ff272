import t from 'tap';
import { createClient } from '../../src/clients/create.js';
import { GRANT } from '../../src/clients/model.js';
import { storeRefreshToken } from '../../src/tokens/refresh-tokens.js';
import { j } from '../helpers/http.js';
import { tamperSignature } from '../helpers/jwt.js';
import { PrivateRedis } from '../helpers/processes.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';
import type { BootstrapResult } from '../../src/bootstrap.js';

let srv: TestServer;
let b: BootstrapResult;
t.before(async () => {
  srv = await startTestServer();
  b = await setupTenant(srv, 'introspect');
});
t.teardown(() => srv.close());

type Cred = { client_id: string; client_secret: string };
const issue = async (client: Cred = b.clients.exchanger, form: Record<string, string> = {}) =>
  (await j(await postForm(`${srv.url}/token`, client, { grant_type: 'client_credentials', ...form }))).access_token as string;
const introspect = async (token: string, rs: Cred = b.clients.resource_server, extra: Record<string, string> = {}) => {
  const res = await postForm(`${srv.url}/introspect`, rs, { token, ...extra });
  t.equal(res.status, 200);
  return j(res);
};

t.test('an active token introspects with its claims', async (t) => {
  const token = await issue();
  const body = await introspect(token);
  t.equal(body.active, true);
  t.equal(body.sub, b.clients.exchanger.client_id);
  t.equal(body.client_id, b.clients.exchanger.client_id);
  t.equal(body.scope, 'read write');
  t.equal(body.token_type, 'Bearer');
  t.equal(body.iss, srv.config.issuer);
  t.equal(body.aud, b.clients.resource_server.audience);
  t.equal(body.tenant, b.tenant_id);
  t.type(body.exp, 'number');
  t.type(body.iat, 'number');
  t.match(body.jti, /^g\d+:/);
  const again = await introspect(token);
  t.same(again, body, 'the cached answer is the same');
});

t.test('every failure is exactly {active:false}', async (t) => {
  const expired = (await srv.deps.tokens.accessTokens.issue({ tenant: b.tenant_id, sub: 's', clientId: b.clients.exchanger.client_id, aud: b.clients.resource_server.audience, scope: '', ttlSeconds: -60 })).token;
  t.same(await introspect(expired), { active: false }, 'expired');
  t.same(await introspect(tamperSignature(await issue())), { active: false }, 'bad signature');
  t.same(await introspect('not-a-token'), { active: false }, 'garbage');
  const revoked = await issue();
  await postForm(`${srv.url}/revoke`, b.clients.exchanger, { token: revoked });
  t.same(await introspect(revoked), { active: false }, 'revoked');
});

t.test('strictValidation: foreign audience and foreign client are inactive', async (t) => {
  // A client allowed only another audience: its tokens name that audience.
  const { client, clientSecret } = await createClient(srv.deps.sql, srv.deps.tokens.secretKey, {
    tenantId: b.tenant_id, name: 'other', grantTypes: [GRANT.clientCredentials], scopes: ['read'], allowedAudiences: ['https://other.example'],
  });
  const other = { client_id: client.clientId, client_secret: clientSecret! };
  t.same(await introspect(await issue(other)), { active: false }, 'token for another audience');
  // A token naming our audience, minted for a client that is not allowed to call this resource server.
  const foreignClient = (await srv.deps.tokens.accessTokens.issue({ tenant: b.tenant_id, sub: 's', clientId: client.clientId, aud: b.clients.resource_server.audience, scope: 'read', ttlSeconds: 60 })).token;
  t.same(await introspect(foreignClient), { active: false }, 'token issued to a client not allowed for this resource server');
  // A resource server without strict validation sees the same token as active.
  const { client: lax, clientSecret: laxSecret } = await createClient(srv.deps.sql, srv.deps.tokens.secretKey, {
    tenantId: b.tenant_id, name: 'lax rs', grantTypes: [], canIntrospect: true, audience: 'https://lax.example', strictValidation: false,
  });
  t.equal((await introspect(foreignClient, { client_id: lax.clientId, client_secret: laxSecret! })).active, true);
});

t.test('tokens of another tenant are inactive for this tenant\'s resource server', async (t) => {
  const other = await setupTenant(srv, 'introspect-other');
  t.same(await introspect(await issue(other.clients.exchanger)), { active: false });
});

t.test('a revocation after a cache hit makes the next answer inactive', async (t) => {
  const token = await issue();
  t.equal((await introspect(token)).active, true);
  t.equal((await introspect(token)).active, true, 'served from the cache');
  await postForm(`${srv.url}/revoke`, b.clients.exchanger, { token });
  t.same(await introspect(token), { active: false }, 'revocation is checked on the cache hit');
});

t.test('revoking everything issued to a client before now, and disabling a client, deactivate cached tokens', async (t) => {
  const token = await issue();
  t.equal((await introspect(token)).active, true);
  await srv.deps.tokens.revocations.revokeBefore(b.tenant_id, 'client', b.clients.exchanger.client_id, Date.now(), 3600);
  t.same(await introspect(token), { active: false }, 'not-before mark applies to a cached answer');
  await new Promise((r) => setTimeout(r, 1100));
  const fresh = await issue();
  t.equal((await introspect(fresh)).active, true, 'tokens issued after the mark are live');
  await srv.deps.store.forTenant(b.tenant_id).clients.update(b.clients.exchanger.client_id, { status: 'disabled' });
  await srv.deps.tokens.clients.changed(b.clients.exchanger.client_id);
  t.same(await introspect(fresh), { active: false }, 'tokens of a disabled client are inactive');
  await srv.deps.store.forTenant(b.tenant_id).clients.update(b.clients.exchanger.client_id, { status: 'active' });
  await srv.deps.tokens.clients.changed(b.clients.exchanger.client_id);
});

t.test('refresh tokens introspect too, and token_type_hint is honoured', async (t) => {
  const rt = await storeRefreshToken(srv.deps.sql, {
    tenantId: b.tenant_id, clientId: b.clients.web.client_id, sub: 'u_1', scope: 'openid', accessJti: null, authTime: null, ttlSeconds: 600, generation: srv.deps.tokens.sharding.current(),
  });
  const { client, clientSecret } = await createClient(srv.deps.sql, srv.deps.tokens.secretKey, { tenantId: b.tenant_id, name: 'rs2', grantTypes: [], canIntrospect: true, audience: 'https://rs2.example' });
  const rs2 = { client_id: client.clientId, client_secret: clientSecret! };
  const body = await introspect(rt, rs2, { token_type_hint: 'refresh_token' });
  t.equal(body.active, true);
  t.equal(body.token_type, 'refresh_token');
  t.equal(body.sub, 'u_1');
  t.equal((await introspect(rt, rs2, { token_type_hint: 'access_token' })).active, true, 'a wrong hint still finds it');
});

t.test('only clients allowed to introspect may call; bad credentials are invalid_client', async (t) => {
  const token = await issue();
  let res = await postForm(`${srv.url}/introspect`, b.clients.exchanger, { token });
  t.equal(res.status, 403);
  t.equal((await j(res)).error, 'unauthorized_client');
  res = await postForm(`${srv.url}/introspect`, { client_id: b.clients.resource_server.client_id, client_secret: 'nope' }, { token });
  t.equal(res.status, 401);
  t.equal((await j(res)).error, 'invalid_client');
  res = await postForm(`${srv.url}/introspect`, b.clients.resource_server, {});
  t.equal(res.status, 400);
  t.equal((await j(res)).error, 'invalid_request');
});

t.test('with Redis stopped no token is reported active', async (t) => {
  const redis = new PrivateRedis();
  await redis.start();
  const s2 = await startTestServer({ REDIS_URL: redis.url });
  t.teardown(async () => { await s2.close(); await redis.destroy(); });
  const b2 = await setupTenant(s2, 'introspect-redis');
  const token = (await j(await postForm(`${s2.url}/token`, b2.clients.exchanger, { grant_type: 'client_credentials' }))).access_token;
  t.equal((await j(await postForm(`${s2.url}/introspect`, b2.clients.resource_server, { token }))).active, true);
  await redis.stop();
  const res = await postForm(`${s2.url}/introspect`, b2.clients.resource_server, { token });
  t.equal(res.status, 503);
  const body = await j(res);
  t.notOk(body.active);
  t.equal(body.error, 'service_unavailable');
});
