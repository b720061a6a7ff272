import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import t from 'tap';
import { j } from '../helpers/http.js';
import { claims, header } from '../helpers/jwt.js';
import { startTestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';
import { adminOf } from '../admin/helpers.js';
import type { BootstrapResult } from '../../src/bootstrap.js';

// Issue 35 item 1: a tenant's `signing_algs` setting. For each algorithm, a tenant configured for it issues
// client_credentials and token-exchange tokens that jose verifies against the tenant's JWKS and that
// introspection accepts; a token signed with another tenant's key, or with an algorithm the tenant no
// longer enables, is refused; switching keeps the previous tokens verifying.

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const AT = 'urn:ietf:params:oauth:token-type:access_token';
const ALGS = ['RS256', 'PS256', 'ES256', 'EdDSA'] as const;
const NAMES: Record<string, string[]> = { RS256: ['RS256'], PS256: ['PS256'], ES256: ['ES256'], EdDSA: ['EdDSA', 'Ed25519'] };

const srv = await startTestServer();
t.teardown(() => srv.close());
const platform = await adminOf(srv, ['admin:*'], 'algs-plat', true);

async function tenantWith(algs: string[] | undefined, label: string): Promise<BootstrapResult> {
  const b = await setupTenant(srv, label);
  if (algs) await setAlgs(b.tenant_id, algs);
  return b;
}
async function setAlgs(tenantId: string, algs: string[] | undefined): Promise<void> {
  const r = await platform.call('PUT', `/api/admin/tenants/${tenantId}`, { settings: algs ? { signing_algs: algs } : {} });
  if (r.status !== 200) throw new Error(`PUT tenant: ${r.status} ${JSON.stringify(r.body)}`);
}
const cc = async (b: BootstrapResult) => (await j(await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials', scope: 'read write' }))).access_token as string;
const introspect = async (b: BootstrapResult, token: string) => (await j(await postForm(`${srv.url}/introspect`, b.clients.resource_server, { token }))).active as boolean;
const exchange = (b: BootstrapResult, token: string) => postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: EXCHANGE, subject_token_type: AT, subject_token: token });
const jwksOf = async (tenantId?: string): Promise<JSONWebKeySet> => j(await fetch(`${srv.url}/.well-known/jwks.json${tenantId ? `?tenant=${tenantId}` : ''}`));

for (const alg of ALGS) {
  t.test(`a tenant signing with ${alg}`, async (t) => {
    const b = await tenantWith([alg], `alg-${alg.toLowerCase()}`);
    const jwks = await jwksOf(b.tenant_id);
    const deployment = new Set((await srv.deps.sql<{ kid: string }[]>`select kid from signing_keys`).map((r) => r.kid));
    const own = jwks.keys.filter((k) => !deployment.has(k.kid!));
    t.same([...new Set(own.map((k) => k.alg))].sort(), [...NAMES[alg]!].sort(), 'the tenant JWKS holds its own keys, each with its alg (Ed25519 under both names)');
    t.equal(new Set(own.map((k) => k.kid)).size, 2, 'an active and a published next key');
    t.equal(own.length, 2 * NAMES[alg]!.length);
    t.ok(jwks.keys.filter((k) => deployment.has(k.kid!)).every((k) => k.alg === srv.config.tokenSigningAlg), 'beside the deployment keys its earlier tokens were signed with, for the window');
    for (const k of jwks.keys) t.notOk(k.d, 'public members only');

    const token = await cc(b);
    t.equal(header(token).alg, alg, 'client_credentials signed with the tenant\'s algorithm');
    const v = await jwtVerify(token, createLocalJWKSet(jwks), { algorithms: [alg], issuer: srv.config.issuer, typ: 'at+jwt' });
    t.equal(v.payload.tenant, b.tenant_id, 'jose verifies it against the tenant JWKS');
    await jwtVerify(token, createLocalJWKSet(await jwksOf()), { algorithms: [alg] });
    t.pass('and against the server-wide JWKS');
    t.equal(await introspect(b, token), true, 'introspection accepts it');

    const x = await exchange(b, token);
    t.equal(x.status, 200, 'token exchange accepts it as subject token');
    const exchanged = (await j(x)).access_token as string;
    t.equal(header(exchanged).alg, alg);
    await jwtVerify(exchanged, createLocalJWKSet(jwks), { algorithms: [alg], typ: 'at+jwt' });
    t.equal(await introspect(b, exchanged), true, 'the exchanged token verifies and introspects');

    const meta = await j(await fetch(`${srv.url}/.well-known/openid-configuration?tenant=${b.tenant_id}`));
    for (const f of ['id_token_signing_alg_values_supported', 'access_token_signing_alg_values_supported', 'introspection_signing_alg_values_supported']) t.same(meta[f], NAMES[alg], `discovery ${f}`);
    t.equal(meta.jwks_uri, `${srv.config.issuer}/.well-known/jwks.json?tenant=${b.tenant_id}`);

    // RFC 9701 with the tenant's algorithm.
    const signed = await fetch(`${srv.url}/introspect`, { method: 'POST', headers: { authorization: `Basic ${Buffer.from(`${b.clients.resource_server.client_id}:${b.clients.resource_server.client_secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/token-introspection+jwt' }, body: new URLSearchParams({ token }) });
    const answer = await signed.text();
    t.equal(header(answer).alg, alg, 'signed introspection answer in the tenant\'s algorithm');
    await jwtVerify(answer, createLocalJWKSet(jwks), { algorithms: [alg], typ: 'token-introspection+jwt' });
  });
}

t.test('tokens signed with another tenant\'s key, or an algorithm the tenant does not enable, are refused', async (t) => {
  const es = await tenantWith(['ES256'], 'alg-x-es');
  const ed = await tenantWith(['EdDSA'], 'alg-x-ed');
  const good = await cc(es);
  const c = claims(good);
  // The ES256 tenant's claims under the EdDSA tenant's key (kid and all): the key is not the ES256 tenant's.
  const foreign = await srv.deps.tokens.signer.sign(ed.tenant_id, { typ: 'at+jwt' }, c);
  t.equal(header(foreign).alg, 'EdDSA');
  t.equal(await introspect(es, foreign), false, 'another tenant\'s key: inactive');
  t.equal((await j(await exchange(es, foreign))).error, 'invalid_grant', 'and no exchange');
  t.equal(await introspect(ed, foreign), false, 'nor active for the key\'s own tenant (the token is not its)');
  // The ES256 tenant's claims under the deployment's RS256 key, once its move off it is past the window.
  // RS256 signatures are deterministic: a different iat makes a different token (introspection caches by token).
  let n = 0;
  const byDeployment = () => srv.deps.tokens.signer.sign('no-such-tenant-uses-deployment-keys', { typ: 'at+jwt' }, { ...c, iat: c.iat - ++n });
  const early = await byDeployment();
  t.equal(header(early).alg, srv.config.tokenSigningAlg);
  t.equal(await introspect(es, early), true, 'within the window after the move, the deployment key still verifies the tenant\'s earlier tokens');
  await srv.deps.sql`update tenants set shared_keys_until = ${Date.now() - 1} where id = ${es.tenant_id}`;
  await srv.deps.tokens.keys.load();
  // The earlier token's answer was cached active: a hit is honoured only while the ring verifies its key for the tenant.
  t.equal(await introspect(es, early), false, 'past it, the earlier token is inactive although its active answer is cached');
  const deployment = await byDeployment();
  t.equal(await introspect(es, deployment), false, 'past it, an algorithm the tenant does not enable is refused');
  t.equal((await j(await exchange(es, deployment))).error, 'invalid_grant');
  t.equal(await introspect(es, good), true, 'while the tenant\'s own token stays active');
  t.notOk((await jwksOf(es.tenant_id)).keys.some((k) => k.alg === srv.config.tokenSigningAlg && srv.config.tokenSigningAlg !== 'ES256'), 'and the tenant JWKS no longer lists the deployment keys');
});

t.test('switching algorithms: a key of the new one, the old keys published until their tokens expire', async (t) => {
  const b = await tenantWith(undefined, 'alg-switch');
  const before = await cc(b);
  t.equal(header(before).alg, srv.config.tokenSigningAlg, 'without the setting, the server\'s TOKEN_SIGNING_ALG');
  await setAlgs(b.tenant_id, ['ES256']);
  const es = await cc(b);
  t.equal(header(es).alg, 'ES256');
  t.equal(await introspect(b, before), true, 'the token from before the move still introspects');
  await setAlgs(b.tenant_id, ['EdDSA']);
  const ed = await cc(b);
  t.equal(header(ed).alg, 'EdDSA', 'new tokens use the new algorithm');
  const jwks = await jwksOf(b.tenant_id);
  t.ok(jwks.keys.some((k) => k.kid === header(es).kid && k.alg === 'ES256'), 'the retired ES256 key stays published');
  t.ok(jwks.keys.some((k) => k.kid === header(ed).kid), 'beside the new EdDSA key');
  for (const tok of [before, es, ed]) t.equal(await introspect(b, tok), true, `a ${header(tok).alg} token of the tenant stays active`);
  const [row] = await srv.deps.sql<{ status: string; verify_until: string }[]>`select status, verify_until from tenant_signing_keys where tenant_id = ${b.tenant_id} and kid = ${header(es).kid}`;
  t.equal(row!.status, 'retired');
  t.ok(Number(row!.verify_until) >= Date.now() + 86_000_000, 'kept for the longest token lifetime');
  // Once its window is over, the retired key verifies nothing and leaves the JWKS.
  await srv.deps.sql`update tenant_signing_keys set verify_until = ${Date.now() - 1} where tenant_id = ${b.tenant_id} and kid = ${header(es).kid}`;
  await srv.deps.tokens.keys.load();
  t.equal((await j(await exchange(b, es))).error, 'invalid_grant', 'an ES256 token after its key\'s window: refused (exchange verifies afresh)');
  t.notOk((await jwksOf(b.tenant_id)).keys.some((k) => k.kid === header(es).kid), 'and its key is no longer published');
  t.equal(await introspect(b, ed), true);
  // Back to the default: the deployment's keys sign again; the tenant's EdDSA key still verifies its tokens.
  await setAlgs(b.tenant_id, undefined);
  t.equal(header(await cc(b)).alg, srv.config.tokenSigningAlg, 'without the setting again, the server\'s algorithm');
  t.equal(await introspect(b, ed), true, 'the EdDSA token stays active until it expires');
});

t.test('settings, rotation and the admin API', async (t) => {
  const b = await tenantWith(['ES256', 'EdDSA'], 'alg-admin');
  const bad = await platform.call('PUT', `/api/admin/tenants/${b.tenant_id}`, { settings: { signing_algs: ['HS256'] } });
  t.equal(bad.status, 422);
  t.equal(bad.body.error, 'validation_error');
  t.equal((await platform.call('PUT', `/api/admin/tenants/${b.tenant_id}`, { settings: { signing_algs: [] } })).status, 422, 'at least one algorithm');
  t.equal((await platform.call('PUT', `/api/admin/tenants/${b.tenant_id}`, { settings: { signing_algs: ['ES256', 'ES256'] } })).status, 422, 'no duplicates');
  const { rotateTenantKeys } = await import('../../src/tokens/tenant-keys.js');
  const first = header(await cc(b)).kid;
  const r = await rotateTenantKeys(srv.deps.sql, srv.config.keyEncryptionKey, b.tenant_id);
  t.same(r.map((x) => x.alg), ['ES256', 'EdDSA'], 'every algorithm of the tenant rotates');
  t.ok((await jwksOf(b.tenant_id)).keys.length > 0);
  await srv.deps.tokens.keys.load();
  const after = await cc(b);
  t.equal(header(after).kid, r[0]!.active, 'the published next key signs');
  t.equal(r[0]!.retired, first);
  t.equal(await introspect(b, after), true);

  // Client metadata: id_token_signed_response_alg / introspection_signed_response_alg among the tenant's algorithms.
  const admin = await adminOf(srv, ['admin:*'], 'alg-admin-t');
  await setAlgs(admin.tenantId, ['ES256', 'EdDSA']);
  const refused = await admin.call('POST', '/api/admin/clients', { name: 'x', grant_types: ['client_credentials'], id_token_signed_response_alg: 'RS256' });
  t.equal(refused.status, 422);
  t.equal(refused.body.error, 'validation_error');
  t.match(refused.body.details.id_token_signed_response_alg[0], /ES256, EdDSA, Ed25519/);
  const intro = await admin.call('POST', '/api/admin/clients', { name: 'x', grant_types: ['client_credentials'], introspection_signed_response_alg: 'PS256' });
  t.equal(intro.status, 422);
  t.ok(intro.body.details.introspection_signed_response_alg);
  const ok = await admin.call('POST', '/api/admin/clients', { name: 'x', grant_types: ['client_credentials'], id_token_signed_response_alg: 'Ed25519' });
  t.equal(ok.status, 201);
  t.equal(ok.body.id_token_signed_response_alg, 'Ed25519');
  const upd = await admin.call('PUT', `/api/admin/clients/${ok.body.client_id}`, { id_token_signed_response_alg: 'RS256' });
  t.equal(upd.status, 422, 'an update is held to the same rule');
  t.equal((await admin.call('PUT', `/api/admin/clients/${ok.body.client_id}`, { id_token_signed_response_alg: 'ES256' })).body.id_token_signed_response_alg, 'ES256');
});
