import t from 'tap';
import type { BootstrapResult } from '../../src/bootstrap.js';
import { closeLogin } from '../../src/login/index.js';
import { createLogger } from '../../src/log.js';
import { startSmtpSink, type SmtpSink } from '../../src/mail/dev-sink.js';
import { startEmailWorker, type RunningEmailWorker } from '../../workers/email-worker.js';
import { events } from '../admin/helpers.js';
import { codeFor, mailCount } from '../login/fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { setupTenant } from '../helpers/tokens.js';
import { person, requestBody, softPasskey, step, type Person } from './helpers.js';

let srv: TestServer, sink: SmtpSink, worker: RunningEmailWorker;
let b: BootstrapResult;
let requester: Person, ann: Person, bob: Person;
t.before(async () => {
  sink = await startSmtpSink();
  srv = await startTestServer({ SMTP_URL: `smtp://127.0.0.1:${sink.port}` });
  worker = await startEmailWorker(srv.config, createLogger('silent'));
  b = await setupTenant(srv, 'artifact');
  requester = await person(srv, b.tenant_id, 'requester');
  ann = await person(srv, b.tenant_id, 'ann', ['admin:approvals:read', 'admin:approvals:approve']);
  bob = await person(srv, b.tenant_id, 'bob', ['admin:approvals:read', 'admin:approvals:approve']);
});
t.teardown(async () => { await worker.close(); await srv.close(); await closeLogin(srv.deps); await sink.close(); });

const base = (id: string) => `/api/admin/approvals/${id}`;
const art = (id: string) => `/api/approval-artifacts/${id}`;

t.test('email_otp artifact: detail, the emailed code from the SMTP sink, completion approves, single use', async (t) => {
  const req = (await requester.call('POST', '/api/admin/approvals', requestBody(b.clients.resource_server.audience, [step('owner', ann.id, 'email_otp')]))).body;
  const stepId = req.approvals[0].id;
  let r = await requester.call('POST', `${base(req.public_request_id)}/steps/${stepId}/artifacts`, {});
  t.equal(r.status, 201, JSON.stringify(r.body));
  const issued = r.body;
  t.match(issued.artifact_id, /^apa_/);
  t.ok(issued.expires_at - Date.now() <= 600_000, 'at most ten minutes');

  r = await ann.call('GET', art(issued.artifact_id));
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.same(Object.keys(r.body).sort(), ['approval', 'artifact', 'completion_requirements', 'request']);
  t.same(r.body.artifact, { artifact_id: issued.artifact_id, method: 'email_otp', expires_at: issued.expires_at });
  t.same(r.body.request, {
    public_request_id: req.public_request_id, investigation_id: req.investigation_id, request_surface: 'support_console', requested_action: 'read',
    redaction_level: 'masked', status: 'pending', reason_code: 'customer_ticket', policy_preset: 'support_case_default', ticket_reference: { system: 'zendesk', id: 'ZD-1234' }, reference: 'case 77',
  });
  t.same(r.body.approval, { id: stepId, step_key: 'owner', side: 'admin_operator', subject_type: 'admin_user', subject_id: ann.id, status: 'pending', method: 'email_otp', expires_at: req.approvals[0].expires_at });
  t.same(r.body.completion_requirements, { mode: 'step_up', acceptable_methods: ['email_otp'] });

  t.equal((await bob.call('GET', art(issued.artifact_id))).status, 404, 'another approver than the bound one sees nothing');
  t.equal((await requester.call('GET', art(issued.artifact_id))).status, 404, 'nor does the requester');

  r = await ann.call('POST', `${art(issued.artifact_id)}/complete`, { decision: 'approve', code: '000000' });
  t.equal(r.status, 400, 'no code was sent yet: a client-made code is not proof');
  r = await ann.call('POST', `${art(issued.artifact_id)}/complete`, { decision: 'approve' });
  t.equal(r.status, 400, 'completion without the step-up');

  r = await ann.call('POST', `${art(issued.artifact_id)}/email-code`, {});
  t.equal(r.status, 202);
  const code = await codeFor(sink, ann.email);
  t.match(code, /^\d{6}$/);
  const wrong = code === '123456' ? '654321' : '123456';
  r = await ann.call('POST', `${art(issued.artifact_id)}/complete`, { decision: 'approve', code: wrong });
  t.equal(r.status, 400, 'a wrong code');
  t.equal(r.body.error, 'invalid_request');

  r = await ann.call('POST', `${art(issued.artifact_id)}/complete`, { decision: 'approve', code });
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.match(r.body, { artifact_id: issued.artifact_id, decision: 'approve', approval: { id: stepId, status: 'approved', decided_by: ann.id }, request: { public_request_id: req.public_request_id, status: 'approved' } });

  r = await ann.call('GET', art(issued.artifact_id));
  t.equal(r.status, 404, 'a consumed artifact');
  t.equal(r.body.error, 'not_found');
  t.equal((await ann.call('POST', `${art(issued.artifact_id)}/complete`, { decision: 'approve', code })).status, 404, 'single use');

  const full = (await requester.call('GET', base(req.public_request_id))).body;
  t.equal(full.grants[0].status, 'active', 'the approval made its grant');
  t.ok((await events(srv, b.tenant_id)).some((e) => e.event === 'security.alert' && e.data.kind === 'elevation_grant.issued' && e.data.request_id === req.public_request_id));
  const audit = await srv.deps.sql<{ action: string }[]>`select action from admin_audit_log where tenant_id = ${b.tenant_id} and resource_id = ${req.public_request_id} and result = 'success' order by created_at, id`;
  t.same(audit.map((a) => a.action), ['approval_request.create', 'approval_artifact.issue', 'approval_step.approve']);
});

t.test('portal_confirm artifact completes without step-up; deny via artifact; expired artifact is gone; other tenant 404', async (t) => {
  const req = (await requester.call('POST', '/api/admin/approvals', requestBody(b.clients.resource_server.audience, [step('ops', null)]))).body;
  const a = (await requester.call('POST', `${base(req.public_request_id)}/steps/${req.approvals[0].id}/artifacts`, { expires_in: 60 })).body;
  const detail = (await bob.call('GET', art(a.artifact_id))).body;
  t.same(detail.completion_requirements, { mode: 'confirm', acceptable_methods: ['portal_confirm'] });

  const b2 = await setupTenant(srv, 'artifact-other');
  const intruder = await person(srv, b2.tenant_id, 'intruder');
  t.equal((await intruder.call('GET', art(a.artifact_id))).status, 404, 'another tenant\'s approver');
  t.equal((await intruder.call('POST', `${art(a.artifact_id)}/complete`, { decision: 'approve' })).status, 404);

  const expired = (await requester.call('POST', `${base(req.public_request_id)}/steps/${req.approvals[0].id}/artifacts`, {})).body;
  await srv.deps.sql`update approval_artifacts set expires_at = ${Date.now() - 1} where tenant_id = ${b.tenant_id} and id = ${expired.artifact_id}`;
  const gone = await bob.call('GET', art(expired.artifact_id));
  t.equal(gone.status, 404, 'an expired artifact');
  t.same(Object.keys(gone.body).sort(), ['error', 'error_description', 'message'].filter((k) => k in gone.body).sort());
  t.equal(gone.body.error, 'not_found');

  const r = await bob.call('POST', `${art(a.artifact_id)}/complete`, { decision: 'deny', reason_code: 'not_justified' });
  t.equal(r.status, 200);
  t.match(r.body, { decision: 'deny', approval: { status: 'denied', reason_code: 'not_justified' }, request: { status: 'denied' } });
});

t.test('reauth needs a recent sign-in; passkey needs an assertion over a server-issued challenge', async (t) => {
  const req = (await requester.call('POST', '/api/admin/approvals', requestBody(b.clients.resource_server.audience, [step('re', null, 'reauth'), step('pk', null, 'passkey')]))).body;
  const re = (await requester.call('POST', `${base(req.public_request_id)}/steps/${req.approvals[0].id}/artifacts`, {})).body;
  const pk = (await requester.call('POST', `${base(req.public_request_id)}/steps/${req.approvals[1].id}/artifacts`, {})).body;
  t.same((await bob.call('GET', art(re.artifact_id))).body.completion_requirements, { mode: 'step_up', acceptable_methods: ['reauth'] });

  const stale = await person(srv, b.tenant_id, 'stale', ['admin:approvals:approve'], { authTime: Math.floor(Date.now() / 1000) - 3600 });
  let r = await stale.call('POST', `${art(re.artifact_id)}/complete`, { decision: 'approve' });
  t.equal(r.status, 403, 'a sign-in an hour old is not re-authentication');
  t.match(r.body.error_description, /Sign in again/);
  r = await bob.call('POST', `${art(re.artifact_id)}/complete`, { decision: 'approve' });
  t.equal(r.status, 200);
  t.equal(r.body.request.status, 'partially_approved');

  // Passkey step-up: a challenge the server issued for this artifact and approver, signed by the approver's own passkey.
  t.same((await ann.call('GET', art(pk.artifact_id))).body.completion_requirements, { mode: 'step_up', acceptable_methods: ['passkey'] });
  r = await ann.call('POST', `${art(pk.artifact_id)}/passkey-options`, {});
  t.equal(r.status, 409, 'an approver without a passkey');
  r = await ann.call('POST', `${art(pk.artifact_id)}/complete`, { decision: 'approve' });
  t.equal(r.status, 400, 'no assertion');
  const annKey = await softPasskey(srv, b.tenant_id, ann.id);
  const bobKey = await softPasskey(srv, b.tenant_id, bob.id);
  r = await ann.call('POST', `${art(pk.artifact_id)}/passkey-options`, {});
  t.equal(r.status, 200);
  t.same(r.body.options.allowCredentials.map((c: any) => c.id), [annKey.credentialId], 'only the approver\'s own passkeys');
  r = await ann.call('POST', `${art(pk.artifact_id)}/complete`, { decision: 'approve', passkey: bobKey.assert(r.body.options) });
  t.equal(r.status, 400, 'someone else\'s passkey');
  r = await ann.call('POST', `${art(pk.artifact_id)}/complete`, { decision: 'approve', passkey: annKey.assert({ challenge: Buffer.from('made-up-by-the-client').toString('base64url') }) });
  t.equal(r.status, 400, 'a challenge the server never issued');
  t.equal((await ann.call('GET', art(pk.artifact_id))).status, 200, 'refusals do not spend the artifact');
  const opts = (await ann.call('POST', `${art(pk.artifact_id)}/passkey-options`, {})).body.options;
  r = await ann.call('POST', `${art(pk.artifact_id)}/complete`, { decision: 'approve', passkey: annKey.assert(opts) });
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.match(r.body, { approval: { status: 'approved', decided_by: ann.id }, request: { status: 'approved' } });
  r = await ann.call('POST', `${art(pk.artifact_id)}/complete`, { decision: 'approve', passkey: annKey.assert(opts) });
  t.equal(r.status, 404, 'single use');
});

t.test('a step\'s method is proven: a plain approve of email_otp, passkey or reauth is refused and leaves it pending; its proof completes it; portal_confirm takes a plain approve', async (t) => {
  const carol = await person(srv, b.tenant_id, 'carol', ['admin:approvals:read', 'admin:approvals:approve']);
  const dave = await person(srv, b.tenant_id, 'dave', ['admin:approvals:read', 'admin:approvals:approve']);
  const created = await requester.call('POST', '/api/admin/approvals', requestBody(b.clients.resource_server.audience,
    [step('otp', ann.id, 'email_otp'), step('pk', bob.id, 'passkey'), step('re', carol.id, 'reauth'), step('ops', dave.id)]));
  t.equal(created.status, 201, JSON.stringify(created.body));
  const req = created.body;
  const [otp, pk, re, ops] = req.approvals;
  const approve = (p: Person, s: any) => p.call('POST', `${base(req.public_request_id)}/steps/${s.id}/approve`, { reason_code: 'verified' });

  // Each step's own approver, with a sign-in seconds old, still cannot approve a step-up step plainly.
  for (const [p, s] of [[ann, otp], [bob, pk], [carol, re]] as const) {
    const r = await approve(p, s);
    t.equal(r.status, 403, `plain approve of ${s.method}: ${JSON.stringify(r.body)}`);
    t.equal(r.body.error, 'forbidden');
    t.match(r.body.error_description, `/api/admin/approvals/${req.public_request_id}/steps/${s.id}/artifacts`, 'the answer names the artifact route');
    t.match(r.body.error_description, '/api/approval-artifacts/{artifactId}/complete');
    t.same(Object.keys(r.body.details), ['method']);
  }
  let full = (await requester.call('GET', base(req.public_request_id))).body;
  t.same(full.approvals.map((a: any) => [a.step_key, a.status, a.decided_by ?? null]), [['otp', 'pending', null], ['pk', 'pending', null], ['re', 'pending', null], ['ops', 'pending', null]], 'every step stays pending');
  t.equal(full.status, 'pending');
  t.same(full.grants, []);

  let r = await approve(dave, ops);
  t.equal(r.status, 200, 'portal_confirm takes a plain approve');
  t.equal(r.body.status, 'partially_approved');
  t.equal(r.body.approvals[3].status, 'approved');

  // The proof each method names, through its artifact.
  const issue = async (s: any) => (await requester.call('POST', `${base(req.public_request_id)}/steps/${s.id}/artifacts`, {})).body.artifact_id as string;
  const otpArt = await issue(otp);
  const mailed = mailCount(sink, ann.email);
  t.equal((await ann.call('POST', `${art(otpArt)}/email-code`, {})).status, 202);
  r = await ann.call('POST', `${art(otpArt)}/complete`, { decision: 'approve', code: await codeFor(sink, ann.email, mailed) });
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.match(r.body.approval, { id: otp.id, status: 'approved', decided_by: ann.id });

  const pkArt = await issue(pk);
  const bobKey = await softPasskey(srv, b.tenant_id, bob.id);
  const opts = (await bob.call('POST', `${art(pkArt)}/passkey-options`, {})).body.options;
  r = await bob.call('POST', `${art(pkArt)}/complete`, { decision: 'approve', passkey: bobKey.assert(opts) });
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.match(r.body.approval, { id: pk.id, status: 'approved', decided_by: bob.id });

  r = await carol.call('POST', `${art(await issue(re))}/complete`, { decision: 'approve' });
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.match(r.body, { approval: { id: re.id, status: 'approved', decided_by: carol.id }, request: { status: 'approved' } });

  full = (await requester.call('GET', base(req.public_request_id))).body;
  t.same(full.approvals.map((a: any) => a.status), ['approved', 'approved', 'approved', 'approved']);
  t.equal(full.grants.length, 1);
  t.equal(full.grants[0].status, 'active');
});

t.test('a plain deny of a step-up step needs no proof (it only takes access away)', async (t) => {
  const req = (await requester.call('POST', '/api/admin/approvals', requestBody(b.clients.resource_server.audience, [step('otp', ann.id, 'email_otp')]))).body;
  const r = await ann.call('POST', `${base(req.public_request_id)}/steps/${req.approvals[0].id}/deny`, { reason_code: 'not_justified' });
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.equal(r.body.status, 'denied');
  t.equal(r.body.approvals[0].status, 'denied');
});
