import { adminContext } from '../admin/context.js';
import { moverOf, requestNotFound } from '../admin/approvals.js';
import { auditedChange, found } from '../admin/route.js';
import type { Deps } from '../deps.js';
import {
  artifactGone, completionRequirements, issueStepUpCode, mayComplete, REAUTH_MAX_AGE_SECONDS, verifyStepUpCode,
} from '../elevation/artifacts.js';
import { deriveRequestStatus, effectiveStepStatus } from '../elevation/model.js';
import { decideStep } from '../elevation/service.js';
import { requestSummary, stepView } from '../elevation/view.js';
import { Conflict, Forbidden } from '../errors.js';
import type { HttpRequest } from '../http/request.js';
import { route } from '../http/route.js';
import type { Route } from '../http/types.js';
import { loginContext } from '../login/context.js';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { authenticationOptions, PasskeyRefused, relyingParty, verifyAssertion } from './passkeys/webauthn.js';
import { deriveKey } from '../tokens/secrets.js';
import { depsFor } from '../request-deps.js';

const APPROVE = 'admin:approvals:approve';
const tags = ['approvals'];
const NO_STORE = { 'Cache-Control': 'no-store' };

/**
 * Approval artifacts as their approver sees them (Bearer of the approver): the spec's detail, the
 * email_otp step-up code, and completion, which approves or denies the step. Any artifact that is not
 * the caller's to complete, consumed, or expired answers the same 404.
 */
export function approvalArtifactRoutes(base: Deps): Route[] {
  const codeKey = deriveKey(base.config.keyEncryptionKey, 'approval-step-up');

  // Each handler works with its request's deps (depsFor), passed down so that a sampled request's
  // Postgres and Redis spans are made under its server span.
  async function load(deps: Deps, req: HttpRequest, artifactId: string) {
    const ctx = await adminContext(deps, req, APPROVE, 'own');
    const store = deps.store.forTenant(ctx.tenantId);
    const now = Date.now();
    const a = await store.approvals.getArtifact(artifactId);
    if (!a || a.consumed_at !== null || Number(a.expires_at) <= now) throw artifactGone();
    const r = found(await store.approvals.getRequest(a.request_id), requestNotFound);
    if (!mayComplete(a, r, ctx.actor.id)) throw artifactGone();
    const steps = await store.approvals.steps(r.id);
    const step = steps.find((s) => s.id === a.step_id);
    if (!step || effectiveStepStatus(step, now) !== 'pending') throw artifactGone();
    return { ctx, store, a, r, steps, step, now };
  }

  /**
   * Passkey step-up: an assertion by one of the approver's own passkeys over a challenge the server
   * issued for this artifact and approver (taken once); the sign counter must move forward.
   */
  async function verifyPasskey(deps: Deps, tenantId: string, userId: string, artifactId: string, response: AuthenticationResponseJSON | undefined): Promise<void> {
    if (!response) throw new PasskeyRefused('missing', 'This artifact needs a passkey assertion (POST .../passkey-options first).');
    const passkeys = deps.store.forTenant(tenantId).passkeys;
    const pk = await passkeys.findByCredentialId(response.id);
    if (!pk || pk.user_id !== userId) throw new PasskeyRefused('unknown_credential', 'This passkey is not one of yours.');
    const out = await verifyAssertion(deps.redis, relyingParty(deps.config), { kind: 'approval', tenantId, userId, artifactId }, response, pk);
    if (!out.ok) throw new PasskeyRefused(out.reason);
    if (!(await passkeys.recordUse(pk.id, pk.counter, out.newCounter, out.backedUp))) throw new PasskeyRefused('counter_regression');
  }

  return [
    route({
      method: 'GET', path: '/api/approval-artifacts/:artifactId', iface: 'admin',
      doc: { summary: 'An approval artifact awaiting its approver: the request and step it decides, and how to complete it', tags, security: 'bearer', permission: APPROVE, responses: { 200: 'elevation.artifact-detail' }, errors: [401, 403, 404] },
      handler: async ({ req, params }) => {
        const { a, r, steps, step, now } = await load(depsFor(base, req), req, params.artifactId!);
        const s = stepView(step, now);
        return {
          headers: NO_STORE,
          body: {
            artifact: { artifact_id: a.id, method: a.method, expires_at: Number(a.expires_at) },
            request: requestSummary(r, deriveRequestStatus(r, steps, now)),
            approval: { id: s.id, step_key: s.step_key, side: s.side, subject_type: s.subject_type, subject_id: s.subject_id, status: s.status, method: s.method, expires_at: s.expires_at },
            completion_requirements: completionRequirements(a.method),
          },
        };
      },
    }),
    route({
      method: 'POST', path: '/api/approval-artifacts/:artifactId/email-code', iface: 'admin', body: 'json',
      doc: { summary: 'Email the approver the one-time code that completes an email_otp artifact', tags, security: 'bearer', permission: APPROVE, responses: { 202: 'elevation.artifact-code-sent' }, errors: [401, 403, 404, 409] },
      handler: async ({ req, params }) => {
        const deps = depsFor(base, req);
        const { ctx, store, a, r, now } = await load(deps, req, params.artifactId!);
        if (a.method !== 'email_otp') throw new Conflict('conflict', 'This artifact is not completed with an emailed code.');
        const user = await store.users.get(ctx.actor.id);
        if (!user) throw new Conflict('conflict', 'The approver has no email address on record.');
        const { code, ttl } = await issueStepUpCode(deps.redis, codeKey, ctx.tenantId, a, ctx.actor.id, now);
        await loginContext(deps).mail().sendApprovalCode(ctx.tenantId, user.email, code, r.id, ttl);
        return { status: 202, headers: NO_STORE, body: { sent: true, expires_in: ttl } };
      },
    }),
    route({
      method: 'POST', path: '/api/approval-artifacts/:artifactId/passkey-options', iface: 'admin', body: 'json',
      doc: { summary: 'WebAuthn options to complete a passkey artifact with one of the approver\'s own passkeys', tags, security: 'bearer', permission: APPROVE, responses: { 200: 'account.ceremony-options' }, errors: [401, 403, 404, 409] },
      handler: async ({ req, params }) => {
        const deps = depsFor(base, req);
        const { ctx, store, a } = await load(deps, req, params.artifactId!);
        if (a.method !== 'passkey') throw new Conflict('conflict', 'This artifact is not completed with a passkey.');
        const own = await store.passkeys.listForUser(ctx.actor.id);
        if (!own.length) throw new Conflict('conflict', 'The approver has no passkey.');
        const options = await authenticationOptions(deps.redis, relyingParty(deps.config), { kind: 'approval', tenantId: ctx.tenantId, userId: ctx.actor.id, artifactId: a.id }, own);
        return { headers: NO_STORE, body: { options } };
      },
    }),
    route({
      method: 'POST', path: '/api/approval-artifacts/:artifactId/complete', iface: 'admin', body: 'json', bodySchema: 'elevation.artifact-complete',
      doc: { summary: 'Complete an artifact: approve or deny its step, with the step-up its method needs (single use)', tags, security: 'bearer', permission: APPROVE, responses: { 200: 'elevation.artifact-completed' }, errors: [400, 401, 403, 404, 409] },
      handler: async ({ req, params, body }) => {
        const deps = depsFor(base, req);
        const { ctx, a, r } = await load(deps, req, params.artifactId!);
        // Step-up proof is what the server recorded, never an assertion the client echoes. Once checked
        // here it is handed to decideStep as `proof`, the only way a step-up step is approved.
        if (a.method === 'email_otp') await verifyStepUpCode(deps.redis, codeKey, ctx.tenantId, a.id, ctx.actor.id, body.code);
        else if (a.method === 'passkey') await verifyPasskey(deps, ctx.tenantId, ctx.actor.id, a.id, body.passkey as unknown as AuthenticationResponseJSON | undefined);
        else if (a.method === 'reauth') {
          const authTime = Number(ctx.token.auth_time);
          if (!Number.isFinite(authTime) || Date.now() / 1000 - authTime > REAUTH_MAX_AGE_SECONDS) throw new Forbidden('forbidden', 'Sign in again to complete this artifact.');
        }
        const out = await auditedChange(deps, ctx, req, { action: `approval_step.${body.decision}`, resourceType: 'approval_request', resourceId: r.id }, async (tx, store) => {
          const locked = found(await store.approvals.getRequest(r.id, { lock: true }), requestNotFound);
          if (!(await store.approvals.consumeArtifact(a.id, Date.now()))) throw artifactGone();
          const now = Date.now();
          const s = await decideStep(deps, tx, store, locked, a.step_id, moverOf(ctx), { decision: body.decision, reason_code: body.reason_code, reason_note: body.reason_note, proof: a.method }, now);
          const result = { artifact_id: a.id, decision: body.decision, approval: stepView(s.step, now), request: { public_request_id: r.id, status: s.status } };
          return { result, metadata: { artifact_id: a.id, method: a.method, step_id: a.step_id, status: s.status }, after: { status: s.status, step: s.step.status } };
        });
        return { headers: NO_STORE, body: out };
      },
    }),
  ];
}

