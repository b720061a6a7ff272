import t from 'tap';
import { j } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';
import { storeRefreshToken } from '../../src/tokens/refresh-tokens.js';
import type { BootstrapResult } from '../../src/bootstrap.js';

let srv: TestServer;
let b: BootstrapResult;
t.before(async () => {
  srv = await startTestServer();
  b = await setupTenant(srv, 'refresh');
});
t.teardown(() => srv.close());

const seed = () => storeRefreshToken(srv.deps.sql, {
  tenantId: b.tenant_id, clientId: b.clients.web.client_id, sub: 'u_42', scope: 'openid read', accessJti: null, authTime: Date.now(),
  claims: { aud: 'https://api.svc.local' }, ttlSeconds: 3600, generation: srv.deps.tokens.sharding.current(),
});
const refresh = (token: string, extra: Record<string, string> = {}) => postForm(`${srv.url}/token`, b.clients.web, { grant_type: 'refresh_token', refresh_token: token, ...extra });
const introspect = async (token: string) => j(await postForm(`${srv.url}/introspect`, b.clients.resource_server, { token }));

t.test('each use rotates the refresh token; the new pair works', async (t) => {
  const rt0 = await seed();
  t.match(rt0, /^rt\.g\d+\.\d+\.[A-Za-z0-9_-]{43}$/, 'carries its generation and shard');
  const res = await refresh(rt0);
  t.equal(res.status, 200);
  const body = await j(res);
  t.not(body.refresh_token, rt0, 'a new refresh token');
  t.equal(body.scope, 'openid read');
  t.equal((await introspect(body.access_token)).sub, 'u_42');
  const next = await refresh(body.refresh_token, { scope: 'read' });
  t.equal(next.status, 200);
  t.equal((await j(next)).scope, 'read', 'a refresh may narrow scope');
});

t.test('replaying a rotated refresh token revokes the whole family and its access tokens', async (t) => {
  const rt0 = await seed();
  const first = await j(await refresh(rt0));
  const second = await j(await refresh(first.refresh_token));
  t.equal((await introspect(second.access_token)).active, true);
  const replay = await refresh(rt0);
  t.equal(replay.status, 400);
  t.same(await j(replay), { error: 'invalid_grant', error_description: 'The refresh token is invalid.' });
  t.equal((await refresh(second.refresh_token)).status, 400, 'the newest refresh token of the family is revoked too');
  t.same(await introspect(second.access_token), { active: false }, 'access tokens issued from the family are revoked');
  t.same(await introspect(first.access_token), { active: false });
  const alerts = await srv.deps.sql<{ data: { reason: string; user_id: string } }[]>`
    select data from event_outbox where tenant_id = ${b.tenant_id} and event = 'security.alert'`;
  t.same(alerts.map((a) => [a.data.reason, a.data.user_id]), [['refresh_token_reuse', 'u_42']], 'the reuse raised a security.alert in the same transaction');
});

t.test('a refresh token belongs to its client; unknown tokens are invalid_grant', async (t) => {
  const rt0 = await seed();
  const res = await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'refresh_token', refresh_token: rt0 });
  t.equal(res.status, 400);
  t.equal((await j(res)).error, 'unauthorized_client', 'the exchanger may not use the refresh grant at all');
  t.equal((await j(await refresh('rt.g1.0.' + 'A'.repeat(43)))).error, 'invalid_grant');
  t.equal((await refresh(rt0)).status, 200, 'the original still works for its own client');
});

t.test('revoking a refresh token (RFC 7009) revokes its family', async (t) => {
  const rt0 = await seed();
  const first = await j(await refresh(rt0));
  t.equal((await postForm(`${srv.url}/revoke`, b.clients.web, { token: first.refresh_token, token_type_hint: 'refresh_token' })).status, 200);
  t.equal((await refresh(first.refresh_token)).status, 400);
  t.same(await introspect(first.access_token), { active: false });
});
