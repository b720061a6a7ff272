import t from 'tap';
import { decodeJwt } from '../../src/tokens/jwt.js';
import { j } from '../helpers/http.js';
import { postForm } from '../helpers/tokens.js';
import { authorizeUrl, codeFor, pkce, sessionCookieFrom, startLoginEnv, uniqueEmail } from '../login/fixtures.js';

// Issue 21 item 8: /api/user/consents takes only tokens whose audience includes the issuer (a token
// minted for another resource is refused), and consents carry selectedScopes and, under the tenant's
// consent_ttl setting, expiresAt.
const env = await startLoginEnv();
t.teardown(() => env.close());
const { srv, sink, tenant } = env;
const web = tenant.clients.web;
const redirectUri = web.redirect_uris[0]!;
const CONSENT_TTL = 7200;

await srv.deps.sql`update tenants set settings = settings || ${srv.deps.sql.json({ consent_ttl: CONSENT_TTL })} where id = ${tenant.tenant_id}`;
await srv.deps.tokens.tenantSettings.changed(tenant.tenant_id);

/** Signs a new user in with the JSON flow; the code is exchanged with `extra` token parameters. */
async function signIn(extra: Record<string, string>): Promise<{ access_token: string; refresh_token: string }> {
  const email = uniqueEmail('aud');
  const { verifier, challenge } = pkce();
  const params = { response_type: 'code', client_id: web.client_id, redirect_uri: redirectUri, scope: 'openid email offline_access', state: 's', code_challenge: challenge, code_challenge_method: 'S256' };
  await fetch(authorizeUrl(srv.url, params), { headers: { accept: 'application/json' }, redirect: 'manual' });
  await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, client_id: web.client_id }) });
  const code = await codeFor(sink, email);
  const verified = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, code }) });
  const cookie = sessionCookieFrom(verified)!;
  const res = await fetch(authorizeUrl(srv.url, { ...params, prompt: 'none' }), { headers: { accept: 'application/json', cookie }, redirect: 'manual' });
  const authCode = new URL(res.headers.get('location')!).searchParams.get('code')!;
  const tok = await postForm(`${srv.url}/token`, web, { grant_type: 'authorization_code', code: authCode, redirect_uri: redirectUri, code_verifier: verifier, ...extra });
  return j(tok);
}

t.test('a login token for another resource is refused; one naming the issuer is accepted', async (t) => {
  const other = await signIn({});
  t.not(decodeJwt(other.access_token).payload.aud, srv.url, 'the default audience is the client\'s resource');
  const refused = await fetch(`${srv.url}/api/user/consents`, { headers: { authorization: `Bearer ${other.access_token}` } });
  t.equal(refused.status, 401);
  const body = await j(refused);
  t.equal(body.error, 'unauthorized');
  t.match(body.error_description, /audience/);
  t.equal((await fetch(`${srv.url}/api/user/consents/cns_x`, { method: 'DELETE', headers: { authorization: `Bearer ${other.access_token}` } })).status, 401, 'DELETE too');

  const mine = await signIn({ audience: srv.url });
  t.same(decodeJwt(mine.access_token).payload.aud, srv.url);
  const ok = await fetch(`${srv.url}/api/user/consents`, { headers: { authorization: `Bearer ${mine.access_token}` } });
  t.equal(ok.status, 200);
  const list = await j(ok);
  t.equal(list.total, 1);
  const c = list.consents[0];
  t.same([...c.selectedScopes].sort(), ['email', 'offline_access', 'openid'], 'selectedScopes written at grant');
  t.ok(c.expiresAt - c.grantedAt >= CONSENT_TTL * 1000 - 5_000 && c.expiresAt - c.grantedAt <= CONSENT_TTL * 1000 + 5_000, `expiresAt = grantedAt + consent_ttl (${c.expiresAt - c.grantedAt} ms)`);
  t.notOk('clientLogoUri' in c, 'clients have no logo URI: the optional field is omitted');

  // The refresh token keeps the audience, so the refreshed token still reaches the account API.
  const refreshed = await j(await postForm(`${srv.url}/token`, web, { grant_type: 'refresh_token', refresh_token: mine.refresh_token }));
  t.equal((await fetch(`${srv.url}/api/user/consents`, { headers: { authorization: `Bearer ${refreshed.access_token}` } })).status, 200);
});

t.test('client_credentials may not name the issuer unless allowed (only sign-in grants may)', async (t) => {
  const res = await postForm(`${srv.url}/token`, tenant.clients.exchanger, { grant_type: 'client_credentials', audience: srv.url });
  t.equal(res.status, 400);
  t.equal((await j(res)).error, 'invalid_target');
});

t.test('an expired consent is no consent', async (t) => {
  const tok = await signIn({ audience: srv.url });
  const sub = String(decodeJwt(tok.access_token).payload.sub);
  await srv.deps.sql`update consents set expires_at = now_ms() - 1 where tenant_id = ${tenant.tenant_id} and user_id = ${sub}`;
  t.equal(await srv.deps.store.forTenant(tenant.tenant_id).consents.find(sub, web.client_id), null, 'an expired consent is no consent');
});
