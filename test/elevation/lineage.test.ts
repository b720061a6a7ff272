import t from 'tap';
import type { BootstrapResult } from '../../src/bootstrap.js';
import { createClient, type ClientInput } from '../../src/clients/create.js';
import { GRANT } from '../../src/clients/model.js';
import { newJti } from '../../src/tokens/jti.js';
import { TOKEN_TYPES } from '../../src/tokens/jwt.js';
import { api } from '../admin/helpers.js';
import { j } from '../helpers/http.js';
import { claims } from '../helpers/jwt.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { adminToken, postForm, setupTenant } from '../helpers/tokens.js';
import { person, requestBody, step, type Person } from './helpers.js';

// Issue 29 items 1 and 4: a token minted by an exchange carries its lineage, and is inactive (and not
// exchangeable) once any ancestor is revoked; an elevated access token is not exchangeable again unless
// its request allows it, and then only for the grant's audience; svc's own subject tokens expire at exp.

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ELEVATION = 'urn:svc:params:oauth:token-type:elevation-grant';
const AT = 'urn:ietf:params:oauth:token-type:access_token';
const OTHER_AUDIENCE = 'https://other.api.example';

let srv: TestServer;
let b: BootstrapResult;
let requester: Person, ann: Person;
let second: { client_id: string; client_secret: string };
let otherRs: { client_id: string; client_secret: string };
let platform: ReturnType<typeof api>;

/** A client of the test tenant, with its secret. */
async function mk(suffix: string, o: Omit<ClientInput, 'tenantId' | 'name'>) {
  const clientId = `${b.tenant_id}-${suffix}`;
  const { clientSecret } = await createClient(srv.deps.sql, srv.deps.tokens.secretKey, { clientId, tenantId: b.tenant_id, name: suffix, ...o });
  return { client_id: clientId, client_secret: clientSecret! };
}
t.before(async () => {
  srv = await startTestServer();
  b = await setupTenant(srv, 'lineage');
  requester = await person(srv, b.tenant_id, 'requester');
  ann = await person(srv, b.tenant_id, 'ann', ['admin:approvals:read', 'admin:approvals:approve']);
  // A second exchanging client of the tenant, allowed the grant's audience and another one.
  second = await mk('second', { grantTypes: [GRANT.clientCredentials, GRANT.tokenExchange], scopes: ['read'], allowedAudiences: [b.clients.resource_server.audience, OTHER_AUDIENCE] });
  otherRs = await mk('other-rs', { grantTypes: [], audience: OTHER_AUDIENCE, canIntrospect: true, strictValidation: true });
  platform = api(srv, await adminToken(srv, { tenantId: b.tenant_id, permissions: ['admin:clients:read', 'admin:clients:write', 'admin:tenants:read', 'admin:tenants:write'], platform: true }));
});
t.teardown(() => srv.close());

const audience = () => b.clients.resource_server.audience;
const exchangeRaw = (client: { client_id: string; client_secret: string }, subject: string, type: string, extra: Record<string, string> = {}) =>
  postForm(`${srv.url}/token`, client, { grant_type: EXCHANGE, subject_token: subject, subject_token_type: type, ...extra });
async function exchangeOk(client: { client_id: string; client_secret: string }, subject: string, extra: Record<string, string> = {}): Promise<string> {
  const r = await exchangeRaw(client, subject, AT, extra);
  const body = await j(r);
  if (r.status !== 200) throw new Error(`exchange: ${r.status} ${JSON.stringify(body)}`);
  return body.access_token;
}
async function active(token: string, rs: { client_id: string; client_secret: string } = b.clients.resource_server): Promise<boolean> {
  const r = await postForm(`${srv.url}/introspect`, rs, { token });
  return (await j(r)).active;
}
async function clientCredentials(client: { client_id: string; client_secret: string } = b.clients.exchanger): Promise<string> {
  const r = await postForm(`${srv.url}/token`, client, { grant_type: 'client_credentials', scope: 'read' });
  return (await j(r)).access_token;
}
async function revoke(token: string, client = b.clients.exchanger) {
  const r = await postForm(`${srv.url}/revoke`, client, { token });
  if (r.status !== 200) throw new Error(`revoke: ${r.status}`);
}

/** An approved request (one portal_confirm step), its grant, and an elevated access token exchanged by the exchanger. */
async function elevated(extra: Record<string, unknown> = {}) {
  const created = await requester.call('POST', '/api/admin/approvals', requestBody(audience(), [step('ops', ann.id)], extra));
  if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
  const req = (await ann.call('POST', `/api/admin/approvals/${created.body.public_request_id}/steps/${created.body.approvals[0].id}/approve`, {})).body;
  const grant = req.grants[0];
  const st = await requester.call('POST', `/api/admin/approvals/${req.public_request_id}/grants/${grant.public_grant_id}/subject-token`, { client_id: b.clients.exchanger.client_id });
  const r = await exchangeRaw(b.clients.exchanger, st.body.subject_token, ELEVATION);
  const body = await j(r);
  if (r.status !== 200) throw new Error(`elevation exchange: ${r.status} ${JSON.stringify(body)}`);
  return { req, grant, subjectToken: st.body.subject_token as string, token: body.access_token as string };
}

t.test('an elevated token is not exchangeable again by default, by any client, for any audience', async (t) => {
  const e = await elevated();
  t.match(claims(e.token).elevation, { grant_id: e.grant.public_grant_id }, 'the token names its grant');
  t.notOk(claims(e.token).elevation.reexchange, 'and says it may not be exchanged again');
  for (const [who, client, aud] of [['the same client, same audience', b.clients.exchanger, audience()], ['another client, another audience', second, OTHER_AUDIENCE]] as const) {
    const r = await exchangeRaw(client, e.token, AT, { audience: aud });
    t.equal(r.status, 400, who);
    t.equal((await j(r)).error, 'invalid_grant', who);
  }
  const view = await requester.call('GET', `/api/admin/approvals/${e.req.public_request_id}`);
  t.equal(view.body.allow_reexchange, false, 'the request shows the default');
});

t.test('a request that allows re-exchange: the grant\'s audience only, and closing the grant ends the descendants', async (t) => {
  const e = await elevated({ allow_reexchange: true });
  const other = await exchangeRaw(second, e.token, AT, { audience: OTHER_AUDIENCE });
  t.equal(other.status, 400, 'another audience is refused');
  t.equal((await j(other)).error, 'invalid_target');

  const child = await exchangeOk(second, e.token, { audience: audience() });
  const c = claims(child);
  t.equal(c.sub, 'usr_customer_42', 'sub stays the target');
  t.same(c.act, { sub: requester.id }, 'act stays the requester');
  t.same(c.authorization_details, claims(e.token).authorization_details, 'authorization_details kept');
  t.equal(c.lineage.length, 2, 'the elevated token and its subject token are the ancestors');
  t.equal(c.lineage[0].jti, claims(e.token).jti);
  const grandchild = await exchangeOk(b.clients.exchanger, child, { audience: audience() });
  t.ok(await active(child) && await active(grandchild), 'active while the grant is');

  const r = await requester.call('POST', `/api/admin/approvals/${e.req.public_request_id}/grants/${e.grant.public_grant_id}/revoke`, { reason_code: 'done' });
  t.equal(r.status, 200);
  t.equal(await active(e.token), false, 'the elevated token is inactive');
  t.equal(await active(child), false, 'its re-exchanged child is inactive');
  t.equal(await active(grandchild), false, 'and the grandchild');
  const again = await exchangeRaw(second, grandchild, AT, { audience: audience() });
  t.equal(again.status, 400, 'a descendant of a closed grant is not exchangeable');
  t.equal((await j(again)).error, 'invalid_grant');
});

t.test('cancelling or denying the request ends every descendant too', async (t) => {
  const e = await elevated({ allow_reexchange: true });
  const child = await exchangeOk(second, e.token, { audience: audience() });
  t.equal(await active(child), true);
  const r = await requester.call('POST', `/api/admin/approvals/${e.req.public_request_id}/cancel`, { reason_code: 'not_needed' });
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.equal(await active(child), false, 'a cancelled request\'s grant takes the re-exchanged token with it');
});

t.test('revoking an ordinary subject token ends the tokens exchanged from it (default)', async (t) => {
  const root = await clientCredentials();
  const child = await exchangeOk(second, root, { audience: OTHER_AUDIENCE });
  const grandchild = await exchangeOk(b.clients.exchanger, child, { audience: audience() });
  t.same(claims(grandchild).lineage.map((a: { jti: string }) => a.jti), [claims(child).jti, claims(root).jti], 'nearest ancestor first');
  t.equal(await active(child, otherRs), true);
  t.equal(await active(grandchild), true);
  await revoke(root);
  t.equal(await active(child, otherRs), false, 'the child is inactive once its subject token is revoked');
  t.equal(await active(grandchild), false, 'and the grandchild');
  const r = await exchangeRaw(second, grandchild, AT, { audience: OTHER_AUDIENCE });
  t.equal(r.status, 400);
  t.equal((await j(r)).error, 'invalid_grant', 'a descendant of a revoked token is not exchangeable');
});

t.test('disabling the client an ancestor was issued to ends the descendants', async (t) => {
  const third = await mk('third', { grantTypes: [GRANT.clientCredentials], scopes: ['read'], allowedAudiences: [audience()] });
  const root = await clientCredentials(third);
  const child = await exchangeOk(b.clients.exchanger, root, { audience: audience() });
  t.equal(await active(child), true);
  const r = await platform('POST', `/api/admin/clients/${third.client_id}/disable`);
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.equal(await active(child), false, 'the child of a token of a disabled client is inactive');
});

t.test('a chain deeper than the bound is refused', async (t) => {
  let token = await clientCredentials();
  for (let i = 0; i < 4; i++) token = await exchangeOk(b.clients.exchanger, token, { audience: audience() });
  t.equal(claims(token).lineage.length, 4);
  const r = await exchangeRaw(b.clients.exchanger, token, AT, { audience: audience() });
  t.equal(r.status, 400);
  t.match(await j(r), { error: 'invalid_grant', error_description: /too many times/ });
});

t.test('a tenant that turns the cascade off keeps ordinary descendants, never elevated ones', async (t) => {
  const r = await platform('PUT', `/api/admin/tenants/${b.tenant_id}`, { settings: { revoke_exchanged_tokens: false } });
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.teardown(async () => { await platform('PUT', `/api/admin/tenants/${b.tenant_id}`, { settings: { revoke_exchanged_tokens: true } }); });
  // Settings reach the process through its cache: wait until an exchange carries no lineage.
  let child = '';
  const root = await clientCredentials();
  for (let i = 0; i < 100; i++) {
    child = await exchangeOk(second, root, { audience: OTHER_AUDIENCE });
    if (claims(child).lineage === undefined) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  t.equal(claims(child).lineage, undefined, 'no lineage on an ordinary exchange');
  await revoke(root);
  t.equal(await active(child, otherRs), true, 'the child outlives its revoked subject token, as the tenant chose');

  const e = await elevated({ allow_reexchange: true });
  const elevatedChild = await exchangeOk(second, e.token, { audience: audience() });
  t.ok(claims(elevatedChild).lineage?.length, 'an elevated descendant keeps its lineage');
  await requester.call('POST', `/api/admin/approvals/${e.req.public_request_id}/grants/${e.grant.public_grant_id}/revoke`, { reason_code: 'done' });
  t.equal(await active(elevatedChild), false, 'and ends with its grant');
});

t.test('an elevation subject token is refused from its exp on (no clock tolerance for our own tokens)', async (t) => {
  const e = await elevated();
  const sc = claims(e.subjectToken);
  // The same token as the server would mint, but expired two seconds ago (inside the old 5 s tolerance).
  const now = Math.floor(Date.now() / 1000);
  const g = srv.deps.tokens.sharding.current(b.clients.exchanger.client_id);
  const expired = await srv.deps.tokens.signer.sign(String(sc.tenant), { typ: TOKEN_TYPES.elevation }, { ...sc, iat: now - 60, exp: now - 2, jti: newJti(g.generation, srv.config.region, g.shardCount) });
  const r = await exchangeRaw(b.clients.exchanger, expired, ELEVATION);
  t.equal(r.status, 400);
  t.match(await j(r), { error: 'invalid_grant', error_description: /expired/ });
});
