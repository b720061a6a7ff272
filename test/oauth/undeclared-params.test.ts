import t from 'tap';
import { createClient } from '../../src/clients/create.js';
import type { Grant } from '../../src/oauth/grants/grant.js';
import { grants } from '../../src/oauth/grants/index.js';
import type { Form } from '../../src/oauth/params.js';
import { grantInput } from '../../src/oauth/token.js';
import { schemas } from '../../src/generated/index.js';
import { uniqueName } from '../helpers/env.js';
import { j } from '../helpers/http.js';
import { claims } from '../helpers/jwt.js';
import { postForm } from '../helpers/tokens.js';
import { authorizeUrl, codeFor, pkce, sessionCookieFrom, startLoginEnv, uniqueEmail } from '../login/fixtures.js';

// /token hands each grant only the parameters it declares: anything else a client sends (a parameter
// of another grant, or one nobody defines) is ignored (RFC 6749 3.2) and never shows up in the answer.

// Started before the first test: a teardown registered after a finished synchronous subtest never ran, and
// the server's Redis and Postgres connections kept the file alive after its last test.
const env = await startLoginEnv();
t.teardown(() => env.close());

t.test('the token endpoint passes a grant only what it declares', async (t) => {
  const form = { grant_type: 'refresh_token', refresh_token: 'rt.x', scope: 'read', audience: ['https://a.example'] as [string], code: 'c', foo: 'bar', client_secret: 's' };
  t.same(grantInput({ params: ['refresh_token', 'scope'] }, form), { refresh_token: 'rt.x', scope: 'read' });
  t.same(grantInput({ params: ['audience'] }, form), { audience: ['https://a.example'] });
  const named = Object.keys((schemas['form.token'] as { properties: Record<string, unknown> }).properties);
  for (const [type, grant] of grants) {
    t.ok(grant.params.length > 0, `${type} declares its parameters`);
    for (const p of grant.params) t.ok(named.includes(p), `${type}: ${p} is a form.token parameter`);
    t.notOk(grant.params.includes('client_secret' as never), `${type} never sees client credentials`);
  }
});

const { srv, sink, tenant } = env;
const web = tenant.clients.web;
const exchanger = tenant.clients.exchanger;
const redirectUri = web.redirect_uris[0]!;

t.test('through the endpoint, a grant receives exactly the parameters it declares', async (t) => {
  const seen: Form[] = [];
  const probe: Grant = {
    type: 'urn:test:probe', params: ['scope', 'resource'],
    async handle(_deps, _client, form) { seen.push(form); return { access_token: 'probe', token_type: 'Bearer', expires_in: 1 }; },
  };
  const table = grants as Map<string, Grant>;
  table.set(probe.type, probe);
  t.teardown(() => { table.delete(probe.type); });
  const clientId = uniqueName('probe');
  const { clientSecret } = await createClient(srv.deps.sql, srv.deps.tokens.secretKey, { clientId, tenantId: tenant.tenant_id, name: 'Probe', grantTypes: [probe.type] });
  const res = await postForm(`${srv.url}/token`, { client_id: clientId, client_secret: clientSecret! }, {
    grant_type: probe.type, scope: 'read', resource: ['https://r1.example', 'https://r2.example'], foo: 'bar', code: 'c', refresh_token: 'rt', audience: 'https://a.example',
  });
  t.equal(res.status, 200);
  t.same(seen, [{ scope: 'read', resource: ['https://r1.example', 'https://r2.example'] }], 'no grant_type, client credentials, other grants\' or unknown parameters');
});

async function authorizationCode(scope: string): Promise<{ code: string; verifier: string }> {
  const email = uniqueEmail('params');
  await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, client_id: web.client_id }) });
  const code = await codeFor(sink, email);
  const verified = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, code }) });
  const cookie = sessionCookieFrom(verified)!;
  const { verifier, challenge } = pkce();
  const res = await fetch(authorizeUrl(srv.url, { response_type: 'code', client_id: web.client_id, redirect_uri: redirectUri, scope, state: 's', prompt: 'none', code_challenge: challenge, code_challenge_method: 'S256' }),
    { headers: { accept: 'application/json', cookie }, redirect: 'manual' });
  const authCode = new URL(res.headers.get('location')!).searchParams.get('code');
  if (!authCode) throw new Error(`no code: ${res.headers.get('location')}`);
  return { code: authCode, verifier };
}

t.test('authorization_code: a scope parameter does not widen the granted scope; a made-up parameter is not reflected', async (t) => {
  const { code, verifier } = await authorizationCode('openid email');
  const res = await postForm(`${srv.url}/token`, web, {
    grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier,
    // Markers with '~', which no base64url token or jti can contain (plain 'bar' once matched a random token).
    scope: 'openid email offline_access read', foo: 'marker~bar', subject_token: 'marker~not-for-this-grant',
  });
  t.equal(res.status, 200);
  const body = await j(res);
  t.equal(body.scope, 'openid email', 'the scope is the one the user granted');
  t.notOk('foo' in body);
  const at = claims(body.access_token);
  t.equal(at.scope, 'openid email');
  t.notOk('foo' in at, 'nothing undeclared lands in the token');
  t.notMatch(JSON.stringify(body), /marker~/);
});

t.test('client_credentials: parameters of other grants and unknown ones are ignored, not refused', async (t) => {
  const res = await postForm(`${srv.url}/token`, exchanger, {
    grant_type: 'client_credentials', scope: 'read', foo: 'marker~bar', refresh_token: 'rt.nope', code: 'nope', redirect_uri: 'https://evil.example/cb', subject_token_type: 'x',
  });
  t.equal(res.status, 200);
  const body = await j(res);
  t.same(Object.keys(body).sort(), ['access_token', 'expires_in', 'scope', 'token_type']);
  t.equal(body.scope, 'read');
  const at = claims(body.access_token);
  t.notOk('foo' in at);
  t.notMatch(JSON.stringify(at), /marker~|evil\.example/);
});

t.test('refresh_token: an audience it does not declare is never checked, so it cannot fail the refresh', async (t) => {
  const { code, verifier } = await authorizationCode('openid offline_access');
  const first = await j(await postForm(`${srv.url}/token`, web, { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier }));
  t.ok(first.refresh_token);
  // The same audience makes a grant that does read it refuse the request...
  const cc = await postForm(`${srv.url}/token`, exchanger, { grant_type: 'client_credentials', audience: 'https://not-allowed.example' });
  t.equal(cc.status, 400);
  t.equal((await j(cc)).error, 'invalid_target');
  // ...while the refresh grant never sees it.
  const res = await postForm(`${srv.url}/token`, web, { grant_type: 'refresh_token', refresh_token: first.refresh_token, audience: 'https://not-allowed.example', foo: 'bar' });
  t.equal(res.status, 200);
  const body = await j(res);
  t.notOk('foo' in body);
  t.not(claims(body.access_token).aud, 'https://not-allowed.example');
});
