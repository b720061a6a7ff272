import t from 'tap';
import { Store, type TenantStore } from '../../src/store/index.js';
import { createSql } from '../../src/sql.js';
import { uniqueName } from '../helpers/env.js';
import { PiiVault } from '../../src/pii/vault.js';
import { loadConfig } from '../../src/config.js';

// Two tenants (Hydra's persister_nid_test): A's approval requests, steps, grants, tokens and artifacts
// cannot be read, listed, decided, revoked or consumed through B's repository.
const sql = createSql({ databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/svc_test', databasePoolSize: 4 });
const store = new Store(sql, PiiVault.fromConfig(loadConfig(), sql));
const tA = uniqueName('nid-a');
const tB = uniqueName('nid-b');
await sql`insert into tenants (id, name) values (${tA}, ${tA}), (${tB}, ${tB})`;
t.teardown(async () => { await sql`delete from tenants where id in (${tA}, ${tB})`; await sql.end({ timeout: 2 }); });
const A: TenantStore = store.forTenant(tA);
const B: TenantStore = store.forTenant(tB);

t.test('approvals', async (t) => {
  const now = Date.now();
  const req = {
    id: 'apr_shared', investigation_id: 'inv_1', request_surface: 'support_console', requested_action: 'read', target_subject_type: 'user',
    target_subject_id: 'usr_1', resource_class: 'user_profile', resource_ids: ['usr_1'], redaction_level: 'masked', reason_code: 'support',
    reason_note: null, ticket_reference: null, reference: null, policy_preset: 'support_case_default', partial_access_allowed: false, allow_reexchange: false,
    audience: 'https://api.example', requester_type: 'user', requester_id: 'adm_1', requester_name: 'Ada', expires_at: now + 60_000,
  };
  const step = { id: 'aps_shared', step_key: 'ops', side: 'admin_operator', subject_type: 'admin', subject_id: null, method: 'portal_confirm', expires_at: now + 60_000 };
  await A.approvals.insertRequest(req, [step]);
  const g = await A.approvals.insertGrant({ id: 'eg_shared', request_id: req.id, authorization_details: [{ type: 'svc_elevation' }], audience: req.audience, expires_at: now + 60_000 });
  await A.approvals.recordToken({ grant_id: g.id, jti: 'g1:local:0:abcdefghijkl', kind: 'subject', client_id: 'c', expires_at: now + 60_000 });
  const art = await A.approvals.insertArtifact({ id: 'apa_shared', request_id: req.id, step_id: step.id, method: 'email_otp', approver_id: null, issued_by: 'adm_1', expires_at: now + 60_000 });

  t.equal(await B.approvals.getRequest(req.id), null, 'get request');
  t.equal(await B.approvals.getRequest(req.id, { lock: true }), null, 'get request for update');
  t.same(await B.approvals.listRequests({ limit: 100 }, now), [], 'list');
  t.same(await B.approvals.steps(req.id), [], 'steps');
  t.equal(await B.approvals.decideStep(step.id, { status: 'approved', by: 'intruder', at: now }), null, 'decide a step');
  await B.approvals.closePendingSteps(req.id, 'cancelled', now);
  await B.approvals.setRequestStatus(req.id, 'cancelled', now);
  t.same(await B.approvals.grants(req.id), [], 'grants');
  t.equal(await B.approvals.getGrant(g.id), null, 'get grant');
  t.equal(await B.approvals.closeGrant(g.id, 'revoked', now, 'intruder'), null, 'revoke grant');
  t.same(await B.approvals.liveTokens(g.id, now), [], 'tokens');
  t.equal(await B.approvals.getArtifact(art.id), null, 'artifact');
  t.equal(await B.approvals.consumeArtifact(art.id, now), false, 'consume artifact');
  t.equal(await B.approvals.audienceKnown('https://api.example'), false);

  const a = (await A.approvals.getRequest(req.id))!;
  t.equal(a.status, 'pending', 'A unchanged');
  t.equal(a.cancelled_at, null);
  t.equal((await A.approvals.steps(req.id))[0]!.status, 'pending');
  t.equal((await A.approvals.getGrant(g.id))!.status, 'active');
  t.equal((await A.approvals.liveTokens(g.id, now)).length, 1);
  t.equal(await A.approvals.consumeArtifact(art.id, now), true);
  t.equal(await A.approvals.consumeArtifact(art.id, now), false, 'single use');
});
