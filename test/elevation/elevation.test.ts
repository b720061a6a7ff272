import * as oidc from 'openid-client';
import t from 'tap';
import type { BootstrapResult } from '../../src/bootstrap.js';
import { createClient } from '../../src/clients/create.js';
import { GRANT } from '../../src/clients/model.js';
import { sweepExpiredApprovals } from '../../src/elevation/sweep.js';
import { events } from '../admin/helpers.js';
import { j } from '../helpers/http.js';
import { claims } from '../helpers/jwt.js';
import { waitFor } from '../helpers/processes.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';
import { person, requestBody, step, type Person } from './helpers.js';

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ELEVATION = 'urn:svc:params:oauth:token-type:elevation-grant';
const AT = 'urn:ietf:params:oauth:token-type:access_token';

let srv: TestServer;
let b: BootstrapResult;
let requester: Person, ann: Person, bob: Person;
let exchanger: oidc.Configuration, rs: oidc.Configuration;
t.before(async () => {
  // The sweep runs in the jobs worker, beside the HTTP process.
  srv = await startTestServer({ ELEVATION_SWEEP_MS: '300' }, { jobsWorker: true });
  b = await setupTenant(srv, 'elev');
  requester = await person(srv, b.tenant_id, 'requester');
  ann = await person(srv, b.tenant_id, 'ann', ['admin:approvals:read', 'admin:approvals:approve']);
  bob = await person(srv, b.tenant_id, 'bob', ['admin:approvals:read', 'admin:approvals:approve']);
  const insecure = { execute: [oidc.allowInsecureRequests] };
  exchanger = await oidc.discovery(new URL(srv.config.issuer), b.clients.exchanger.client_id, b.clients.exchanger.client_secret, oidc.ClientSecretBasic(b.clients.exchanger.client_secret), insecure);
  rs = await oidc.discovery(new URL(srv.config.issuer), b.clients.resource_server.client_id, b.clients.resource_server.client_secret, oidc.ClientSecretBasic(b.clients.resource_server.client_secret), insecure);
});
t.teardown(() => srv.close());

const audience = () => b.clients.resource_server.audience;
const base = (id: string) => `/api/admin/approvals/${id}`;
const exchange = (subject: string) => oidc.genericGrantRequest(exchanger, EXCHANGE, { subject_token: subject, subject_token_type: ELEVATION });

/** A request with one step per approver, every step approved: its grant is active. */
async function approvedRequest(approvers: Person[] = [ann], extra: Record<string, unknown> = {}) {
  const r = await requester.call('POST', '/api/admin/approvals', requestBody(audience(), approvers.map((p, i) => step(`s${i}`, p.id)), extra));
  if (r.status !== 201) throw new Error(`create: ${r.status} ${JSON.stringify(r.body)}`);
  let last: any;
  for (const [i, p] of approvers.entries()) last = await p.call('POST', `${base(r.body.public_request_id)}/steps/${r.body.approvals[i].id}/approve`, {});
  return last.body;
}
async function subjectToken(req: any, body: Record<string, unknown> = { client_id: b.clients.exchanger.client_id }) {
  return requester.call('POST', `${base(req.public_request_id)}/grants/${req.grants[0].public_grant_id}/subject-token`, body);
}

t.test('the whole story: two steps, grant, subject token, exchange, introspection, revocation', async (t) => {
  const created = await requester.call('POST', '/api/admin/approvals', requestBody(audience(), [step('ops', ann.id), step('owner', null)]));
  t.equal(created.status, 201, JSON.stringify(created.body));
  const req = created.body;
  t.match(req.public_request_id, /^apr_/);
  t.match(req.investigation_id, /^inv_/, 'investigation id generated');
  t.equal(req.status, 'pending');
  t.equal(req.redaction_level, 'masked', 'default redaction level');
  t.same(req.resource_ids, ['usr_customer_42'], 'resource ids default to the target');
  t.same(req.approvals.map((a: any) => [a.step_key, a.status, a.subject_id]), [['ops', 'pending', ann.id], ['owner', 'pending', null]]);
  t.same(req.grants, []);
  const [ops, owner] = req.approvals;
  t.ok(req.expires_at - Date.now() <= 15 * 60_000 && req.expires_at - Date.now() > 14 * 60_000, 'support_case_default lives 15 minutes');

  let r = await requester.call('POST', `${base(req.public_request_id)}/steps/${owner.id}/approve`, {});
  t.equal(r.status, 409, 'the requester cannot approve their own request');
  t.equal(r.body.error, 'conflict');
  r = await bob.call('POST', `${base(req.public_request_id)}/steps/${ops.id}/approve`, {});
  t.equal(r.status, 403, 'a step naming its approver takes no other');

  r = await ann.call('POST', `${base(req.public_request_id)}/steps/${ops.id}/approve`, { reason_code: 'verified_ticket' });
  t.equal(r.status, 200);
  t.equal(r.body.status, 'partially_approved');
  t.same(r.body.grants, [], 'no grant before every step is approved');
  r = await ann.call('POST', `${base(req.public_request_id)}/steps/${owner.id}/approve`, {});
  t.equal(r.status, 409, 'one approver approves one step only');

  r = await bob.call('POST', `${base(req.public_request_id)}/steps/${owner.id}/approve`, {});
  t.equal(r.status, 200);
  t.equal(r.body.status, 'approved');
  t.equal(r.body.grants.length, 1, 'exactly one grant');
  const grant = r.body.grants[0];
  t.match(grant, { status: 'active', audience: audience(), expires_at: req.expires_at });
  t.match(grant.public_grant_id, /^eg_/);

  r = await requester.call('GET', base(req.public_request_id));
  t.equal(r.body.status, 'approved');
  t.same(r.body.approvals.map((a: any) => a.status), ['approved', 'approved']);

  // The subject token.
  r = await subjectToken(r.body, { client_id: b.clients.exchanger.client_id, expires_in: 120 });
  t.equal(r.status, 200, JSON.stringify(r.body));
  const st = r.body;
  t.same(Object.keys(st).sort(), ['authorization_details', 'expires_in', 'grant_id', 'integration_hint', 'investigation_id', 'request_id', 'subject_token', 'subject_token_type', 'token_exchange_hint']);
  t.match(st, { grant_id: grant.public_grant_id, request_id: req.public_request_id, investigation_id: req.investigation_id, subject_token_type: ELEVATION, expires_in: 120 });
  t.same(st.token_exchange_hint, { grant_type: EXCHANGE, subject_token_type: ELEVATION, requested_token_type: AT, client_id: b.clients.exchanger.client_id });
  t.same(st.integration_hint, { audience: audience() });
  t.match(st.authorization_details, [{ type: 'svc_elevation', resource_class: 'user_profile', resource_ids: ['usr_customer_42'], actions: ['read'], grant_id: grant.public_grant_id, request_id: req.public_request_id, redaction_level: 'masked' }]);
  const header = JSON.parse(Buffer.from(st.subject_token.split('.')[0], 'base64url').toString());
  t.equal(header.typ, 'svc-elevation+jwt');
  const sc = claims(st.subject_token);
  t.equal(sc.aud, b.clients.exchanger.client_id);
  t.equal(sc.sub, 'usr_customer_42');
  t.match(sc.jti, /^g\d+:local:\d+:[A-Za-z0-9_-]+$/, 'jti in the spec format');
  t.equal(sc.exp - sc.iat, 120);

  // Not an access token: the ordinary exchange and the admin interface refuse it.
  const asAt = await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: EXCHANGE, subject_token: st.subject_token, subject_token_type: AT });
  t.equal(asAt.status, 400, 'an elevation token is not an access token');

  // The exchange, through openid-client.
  const ex = await exchange(st.subject_token);
  t.equal(ex.issued_token_type, AT);
  t.notOk(ex.refresh_token, 'no refresh token');
  t.ok(ex.expires_in! <= 120 * 60 && ex.expires_in! > 0);
  const ac = claims(ex.access_token);
  t.equal(ac.sub, 'usr_customer_42', 'sub is the target');
  t.equal(ac.aud, audience(), 'aud is the grant audience');
  t.same(ac.act, { sub: requester.id }, 'act is the requester');
  t.ok(ac.exp * 1000 <= grant.expires_at + 1000, 'never outlives the grant');

  const intro = await oidc.tokenIntrospection(rs, ex.access_token);
  t.equal(intro.active, true);
  t.equal(intro.aud, audience());
  t.same(intro.act, { sub: requester.id });
  t.same(intro.authorization_details, st.authorization_details);

  // A second subject token, then the revocation: every exchanged token inactive, no new exchange.
  const st2 = (await subjectToken({ public_request_id: st.request_id, grants: [{ public_grant_id: st.grant_id }] })).body;
  r = await requester.call('POST', `${base(req.public_request_id)}/grants/${grant.public_grant_id}/revoke`, { reason_code: 'investigation_closed' });
  t.equal(r.status, 200);
  t.match(r.body, { status: 'revoked', revoke_reason: 'investigation_closed' });
  t.same(await oidc.tokenIntrospection(rs, ex.access_token), { active: false }, 'revoking the grant makes the exchanged token inactive');
  await t.rejects(exchange(st2.subject_token), { error: 'invalid_grant' } as Error & { error: string }, 'a second exchange is 400 invalid_grant');
  const raw = await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: EXCHANGE, subject_token: st2.subject_token, subject_token_type: ELEVATION });
  t.equal(raw.status, 400);
  t.equal((await j(raw)).error, 'invalid_grant');
  r = await subjectToken({ public_request_id: req.public_request_id, grants: [grant] });
  t.equal(r.status, 409, 'no subject token from a revoked grant');
  r = await requester.call('POST', `${base(req.public_request_id)}/grants/${grant.public_grant_id}/revoke`, {});
  t.equal(r.status, 409, 'revoking twice');

  const alerts = (await events(srv, b.tenant_id)).filter((e) => e.event === 'security.alert' && e.data.grant_id === grant.public_grant_id);
  t.same(alerts.map((e) => e.data.kind), ['elevation_grant.issued', 'elevation_grant.used', 'elevation_grant.revoked']);
  t.match(alerts[0]!.data, { request_id: req.public_request_id, investigation_id: req.investigation_id, actor: { id: bob.id } });
  t.match(alerts[1]!.data, { actor: { type: 'client', id: b.clients.exchanger.client_id } });
  t.match(alerts[2]!.data, { actor: { id: requester.id } });

  const audit = await srv.deps.sql<{ action: string }[]>`select action from admin_audit_log where tenant_id = ${b.tenant_id} and resource_id = ${req.public_request_id} and result = 'success' order by created_at, id`;
  t.same(audit.map((a) => a.action), ['approval_request.create', 'approval_step.approve', 'approval_step.approve', 'elevation_grant.subject_token', 'elevation_grant.subject_token', 'elevation_grant.revoke']);
});

t.test('subject token: the client must hold the token exchange and be the token\'s audience at /token', async (t) => {
  const req = await approvedRequest();
  let r = await subjectToken(req, { client_id: b.clients.web.client_id });
  t.equal(r.status, 404);
  t.equal(r.body.error, 'client_not_found', 'a client without the token-exchange grant');
  r = await subjectToken(req, { client_id: 'no-such-client' });
  t.equal(r.body.error, 'client_not_found');
  r = await subjectToken(req, { client_id: b.clients.exchanger.client_id, expires_in: 10 });
  t.equal(r.status, 422, 'expires_in below 60');
  r = await subjectToken(req, { client_id: b.clients.exchanger.client_id, expires_in: 3600 });
  t.equal(r.status, 422, 'expires_in above 1800');

  const made = await createClient(srv.deps.sql, srv.deps.tokens.secretKey, {
    clientId: `${b.tenant_id}-exchanger-2`, tenantId: b.tenant_id, name: 'Second exchanger', grantTypes: [GRANT.tokenExchange], scopes: ['read'], allowedAudiences: [audience()],
  } as never);
  const other = { client_id: made.client.clientId, client_secret: made.clientSecret! };
  const st = (await subjectToken(req)).body;
  const res = await postForm(`${srv.url}/token`, other, { grant_type: EXCHANGE, subject_token: st.subject_token, subject_token_type: ELEVATION });
  t.equal(res.status, 400, 'a client that is not the token\'s aud');
  t.same(await j(res), { error: 'invalid_grant', error_description: 'The subject token was issued for another client.' });
});

t.test('denial (withdrawing an approval) revokes the grant and its tokens; cancel revokes too', async (t) => {
  const req = await approvedRequest();
  const ex = await exchange((await subjectToken(req)).body.subject_token);
  t.equal((await oidc.tokenIntrospection(rs, ex.access_token)).active, true);
  const r = await ann.call('POST', `${base(req.public_request_id)}/steps/${req.approvals[0].id}/deny`, { reason_code: 'wrong_customer' });
  t.equal(r.status, 200);
  t.equal(r.body.status, 'denied');
  t.match(r.body.grants[0], { status: 'revoked', revoke_reason: 'request_denied' });
  t.same(await oidc.tokenIntrospection(rs, ex.access_token), { active: false });
  t.equal((await ann.call('POST', `${base(req.public_request_id)}/steps/${req.approvals[0].id}/approve`, {})).status, 409, 'a denied request takes no more decisions');

  const req2 = await approvedRequest();
  const ex2 = await exchange((await subjectToken(req2)).body.subject_token);
  const c = await requester.call('POST', `${base(req2.public_request_id)}/cancel`, { reason_code: 'no_longer_needed' });
  t.equal(c.status, 200);
  t.equal(c.body.status, 'cancelled');
  t.match(c.body.grants[0], { status: 'revoked', revoke_reason: 'request_cancelled' });
  t.same(await oidc.tokenIntrospection(rs, ex2.access_token), { active: false });
  t.equal((await requester.call('POST', `${base(req2.public_request_id)}/cancel`, {})).status, 409, 'cancelling twice');

  const pending = (await requester.call('POST', '/api/admin/approvals', requestBody(audience(), [step('a', null), step('b', null)]))).body;
  const d = await ann.call('POST', `${base(pending.public_request_id)}/steps/${pending.approvals[0].id}/deny`, {});
  t.equal(d.body.status, 'denied');
  t.same(d.body.approvals.map((a: any) => a.status), ['denied', 'cancelled'], 'a denied request leaves no step pending');
  t.same(d.body.grants, []);
});

t.test('an expired grant: read as expired at once, refused at /token, moved by the sweep', async (t) => {
  const req = await approvedRequest([ann], { policy_preset: 'security_investigation_default' });
  t.ok(req.expires_at - Date.now() <= 5 * 60_000, 'security_investigation_default lives 5 minutes');
  const st = (await subjectToken(req)).body;
  const ex = await exchange(st.subject_token);
  // Time passes: the request (and so its grant) is past expires_at.
  const past = Date.now() - 1000;
  await srv.deps.sql`update approval_requests set expires_at = ${past} where tenant_id = ${b.tenant_id} and id = ${req.public_request_id}`;
  await srv.deps.sql`update elevation_grants set expires_at = ${past} where tenant_id = ${b.tenant_id} and request_id = ${req.public_request_id}`;
  let r = await requester.call('GET', base(req.public_request_id));
  t.equal(r.body.status, 'expired', 'expired on read');
  t.equal(r.body.grants[0].status, 'expired');
  r = await requester.call('GET', `/api/admin/approvals?status=expired&investigation_id=${req.investigation_id}`);
  t.same(r.body.items.map((i: any) => i.public_request_id), [req.public_request_id], 'list filter sees the expiry');
  t.equal((await subjectToken(req)).status, 409, 'no subject token from an expired grant');
  await t.rejects(exchange(st.subject_token), { error: 'invalid_grant' } as Error & { error: string });

  // The repeatable sweep (every 300 ms here) stores the expiry, revokes the tokens and emits the event.
  await waitFor(async () => (await srv.deps.sql`select status from elevation_grants where tenant_id = ${b.tenant_id} and request_id = ${req.public_request_id}`)[0]!.status === 'expired', 10_000);
  const [stored] = await srv.deps.sql<{ status: string }[]>`select status from approval_requests where tenant_id = ${b.tenant_id} and id = ${req.public_request_id}`;
  t.equal(stored!.status, 'expired');
  t.same(await oidc.tokenIntrospection(rs, ex.access_token), { active: false }, 'tokens of an expired grant are revoked');
  const kinds = (await events(srv, b.tenant_id)).filter((e) => e.event === 'security.alert' && e.data.request_id === req.public_request_id).map((e) => e.data.kind);
  t.same(kinds, ['elevation_grant.issued', 'elevation_grant.used', 'elevation_grant.expired']);
  t.equal(await sweepExpiredApprovals(srv.deps), 0, 'nothing left to sweep');
});

t.test('a second tenant\'s admin cannot see or use any of it', async (t) => {
  const req = await approvedRequest();
  const st = (await subjectToken(req)).body;
  const b2 = await setupTenant(srv, 'elev-other');
  const intruder = await person(srv, b2.tenant_id, 'intruder');
  const g = req.grants[0].public_grant_id;
  for (const [m, p, body] of [
    ['GET', base(req.public_request_id), undefined],
    ['POST', `${base(req.public_request_id)}/cancel`, {}],
    ['POST', `${base(req.public_request_id)}/steps/${req.approvals[0].id}/deny`, {}],
    ['POST', `${base(req.public_request_id)}/grants/${g}/revoke`, {}],
    ['POST', `${base(req.public_request_id)}/grants/${g}/subject-token`, { client_id: b2.clients.exchanger.client_id }],
    ['POST', `${base(req.public_request_id)}/steps/${req.approvals[0].id}/artifacts`, {}],
  ] as const) {
    const r = await intruder.call(m, p, body);
    t.equal(r.status, 404, `${m} ${p}`);
  }
  t.notOk((await intruder.call('GET', '/api/admin/approvals')).body.items.some((i: any) => i.public_request_id === req.public_request_id), 'not listed');
  const res = await postForm(`${srv.url}/token`, b2.clients.exchanger, { grant_type: EXCHANGE, subject_token: st.subject_token, subject_token_type: ELEVATION });
  t.equal(res.status, 400, 'the other tenant\'s exchanger cannot use the subject token');
  t.equal((await requester.call('GET', base(req.public_request_id))).body.status, 'approved', 'untouched');
});

t.test('validation: unknown audience, duplicate step keys, no steps', async (t) => {
  let r = await requester.call('POST', '/api/admin/approvals', requestBody('https://unknown.example', [step('a', null)]));
  t.equal(r.status, 422);
  t.ok(r.body.details.audience);
  r = await requester.call('POST', '/api/admin/approvals', requestBody(audience(), [step('a', null), step('a', null)]));
  t.equal(r.status, 422);
  r = await requester.call('POST', '/api/admin/approvals', requestBody(audience(), []));
  t.equal(r.status, 422);
  r = await ann.call('POST', '/api/admin/approvals', requestBody(audience(), [step('a', null)]));
  t.equal(r.status, 403, 'creating needs admin:approvals:write');
});

t.test('a pending step past its own expires_at expires the request (read, list filter, sweep)', async (t) => {
  const req = (await requester.call('POST', '/api/admin/approvals', requestBody(audience(), [{ ...step('a', null), expires_at: Date.now() + 60_000 }, step('b', null)]))).body;
  t.ok(req.approvals[0].expires_at < req.expires_at, 'the step keeps its earlier expiry');
  await srv.deps.sql`update approval_steps set expires_at = ${Date.now() - 1} where tenant_id = ${b.tenant_id} and id = ${req.approvals[0].id}`;
  const r = await requester.call('GET', base(req.public_request_id));
  t.equal(r.body.status, 'expired');
  t.equal(r.body.approvals[0].status, 'expired');
  const list = await requester.call('GET', `/api/admin/approvals?status=expired&investigation_id=${req.investigation_id}`);
  t.same(list.body.items.map((i: any) => [i.public_request_id, i.status]), [[req.public_request_id, 'expired']]);
  t.same((await requester.call('GET', `/api/admin/approvals?status=pending&investigation_id=${req.investigation_id}`)).body.items, []);
  t.equal((await ann.call('POST', `${base(req.public_request_id)}/steps/${req.approvals[1].id}/approve`, {})).status, 409, 'no decision on an expired request');
  await waitFor(async () => (await srv.deps.sql`select status from approval_requests where tenant_id = ${b.tenant_id} and id = ${req.public_request_id}`)[0]!.status === 'expired', 10_000);
  const steps = await srv.deps.sql<{ status: string }[]>`select status from approval_steps where tenant_id = ${b.tenant_id} and request_id = ${req.public_request_id} order by position`;
  t.same(steps.map((x) => x.status), ['expired', 'expired']);
});

t.test('list: cursor pagination over the tenant\'s requests', async (t) => {
  const inv = `inv_page_${Date.now()}`;
  for (let i = 0; i < 3; i++) await requester.call('POST', '/api/admin/approvals', requestBody(audience(), [step('a', null)], { investigation_id: inv }));
  const p1 = await requester.call('GET', `/api/admin/approvals?limit=2&investigation_id=${inv}`);
  t.equal(p1.body.items.length, 2);
  t.type(p1.body.cursor, 'string');
  const p2 = await requester.call('GET', `/api/admin/approvals?limit=2&investigation_id=${inv}&cursor=${p1.body.cursor}`);
  t.equal(p2.body.items.length, 1);
  t.equal(p2.body.cursor, null);
  t.equal(new Set([...p1.body.items, ...p2.body.items].map((i: any) => i.public_request_id)).size, 3);
});

t.test('an exchange racing a revoke never leaves a live token behind', async (t) => {
  for (let i = 0; i < 4; i++) {
    const req = await approvedRequest();
    const st = (await subjectToken(req)).body;
    const [ex, rv] = await Promise.all([
      postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: EXCHANGE, subject_token: st.subject_token, subject_token_type: ELEVATION }),
      requester.call('POST', `${base(req.public_request_id)}/grants/${st.grant_id}/revoke`, {}),
    ]);
    t.equal(rv.status, 200);
    if (ex.status === 200) {
      const token = (await j(ex)).access_token;
      t.same(await oidc.tokenIntrospection(rs, token), { active: false }, `round ${i}: exchanged before the revoke, revoked with it`);
    } else {
      t.equal(ex.status, 400, `round ${i}: refused after the revoke`);
    }
  }
});
