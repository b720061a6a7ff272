import type { Deps } from '../deps.js';
import { declareEvents } from '../events/declare.js';
import type { ApprovalRequestRow, ApprovalStepRow, ElevationGrantRow } from '../store/approvals.js';
import { newId } from '../store/ids.js';
import type { TenantStore } from '../store/index.js';
import type { TxSql } from '../sql.js';
import { Conflict, Forbidden, NotFound } from '../errors.js';
import { proves, StepUpRequired } from './artifacts.js';
import { ALERT_KIND, deriveRequestStatus, effectiveGrantStatus, effectiveStepStatus, REQUEST_MOVES, STEP_MOVES, TERMINAL_REQUEST, type RequestStatus } from './model.js';

/** Who moved a request: an admin, or the expiry sweep. */
export interface Mover { type: string; id: string }

export interface Settled { request: ApprovalRequestRow; steps: ApprovalStepRow[]; grants: ElevationGrantRow[]; status: RequestStatus; /** Whether anything was stored. */ changed: boolean }

/** The RAR (RFC 9396) authorization_details a grant of this request carries. */
export function authorizationDetails(r: ApprovalRequestRow, grantId: string): Array<Record<string, unknown>> {
  return [{
    type: 'svc_elevation', resource_class: r.resource_class, resource_ids: r.resource_ids, actions: [r.requested_action],
    grant_id: grantId, request_id: r.id, investigation_id: r.investigation_id, redaction_level: r.redaction_level,
  }];
}

/** Every move of an elevation grant (issued, used, revoked, expired) is a `security.alert`. */
export const elevationEvents = declareEvents(['security.alert']);

/** The data of a grant's `security.alert`. */
export function alertData(kind: string, g: { id: string }, r: { id: string; investigation_id: string }, actor: Mover): Record<string, unknown> {
  return { kind, grant_id: g.id, request_id: r.id, investigation_id: r.investigation_id, actor: { type: actor.type, id: actor.id } };
}

/** Revokes every unexpired token minted from a grant through the revocation service (Postgres first, then Redis). */
export async function revokeGrantTokens(deps: { tokens: Pick<Deps['tokens'], 'revocations'>; trace?: Deps['trace'] }, store: TenantStore, grantId: string, now: number): Promise<number> {
  const live = await store.approvals.liveTokens(grantId, now);
  for (const t of live) await deps.tokens.revocations.revoke(store.tenantId, t.jti, Math.ceil(Number(t.expires_at) / 1000), deps.trace);
  return live.length;
}

/**
 * Brings a request (locked) to the status its steps and clock give it, inside the caller's transaction:
 * stores the status, creates the one grant when it becomes approved, and closes every active grant
 * (revoked, or expired when its own time is up) when it ends. The tokens of a closed grant are revoked
 * before the transaction commits, so a failure leaves them revoked rather than live (fail closed).
 */
export async function settle(deps: { tokens: Pick<Deps['tokens'], 'revocations'> }, tx: TxSql, store: TenantStore, request: ApprovalRequestRow, actor: Mover, now: number): Promise<Settled> {
  const repo = store.approvals;
  const steps0 = await repo.steps(request.id);
  const status = deriveRequestStatus(request, steps0, now);
  // A request that has ended leaves no step pending (a denied request's other steps are cancelled), so
  // the sweep never finds it again.
  const pending = steps0.some((s) => s.status === 'pending');
  if (TERMINAL_REQUEST.has(status) && pending) await repo.closePendingSteps(request.id, status === 'expired' ? 'expired' : 'cancelled', now);
  let changed = TERMINAL_REQUEST.has(status) && pending;
  if (status !== request.status) { await repo.setRequestStatus(request.id, status); changed = true; }
  const alerts: Array<Record<string, unknown>> = [];
  let grants = await repo.grants(request.id);
  if (status === 'approved' && grants.length === 0) {
    const id = newId('eg');
    const g = await repo.insertGrant({ id, request_id: request.id, authorization_details: authorizationDetails(request, id), audience: request.audience, expires_at: Number(request.expires_at) });
    alerts.push(alertData(ALERT_KIND.issued, g, request, actor));
  }
  for (const g of grants) {
    if (g.status !== 'active') continue;
    const timeUp = effectiveGrantStatus(g, now) === 'expired';
    if (!timeUp && !TERMINAL_REQUEST.has(status)) continue;
    const closed = await repo.closeGrant(g.id, timeUp ? 'expired' : 'revoked', now, timeUp ? 'grant_expired' : `request_${status}`);
    if (!closed) continue;
    await revokeGrantTokens(deps, store, g.id, now);
    alerts.push(alertData(timeUp ? ALERT_KIND.expired : ALERT_KIND.revoked, g, request, actor));
  }
  await elevationEvents.emitAll(tx, store.tenantId, alerts.map((data) => ({ event: 'security.alert', data })));
  changed ||= alerts.length > 0;
  grants = await repo.grants(request.id);
  const steps = await repo.steps(request.id);
  const fresh = (await repo.getRequest(request.id))!;
  return { request: fresh, steps, grants, status, changed };
}

/** What a step decision carries. */
export interface Decision {
  decision: 'approve' | 'deny'; reason_code?: string | undefined; reason_note?: string | undefined;
  /** The step-up method the caller has proven (an artifact's completion checked it); absent for a plain approve. */
  proof?: string | undefined;
}

/**
 * Approves or denies one step of a locked request, then settles the request. The requester may not
 * decide their own request (409 conflict); a step naming its approver accepts that approver only (403);
 * one approver approves at most one step of a request (four eyes, 409); an approval must carry the proof
 * the step's method names (403 otherwise: only portal_confirm is satisfied without one). A denial needs
 * no proof: it only ever takes access away.
 */
export async function decideStep(deps: Pick<Deps, 'tokens'>, tx: TxSql, store: TenantStore, request: ApprovalRequestRow, stepId: string,
  actor: Mover, d: Decision, now: number): Promise<Settled & { step: ApprovalStepRow }> {
  const steps = await store.approvals.steps(request.id);
  const step = steps.find((s) => s.id === stepId);
  if (!step) throw new NotFound('not_found', 'No such approval step.');
  const status = deriveRequestStatus(request, steps, now);
  if (!REQUEST_MOVES.decide.has(status)) throw new Conflict('conflict', `The request is ${status}.`);
  if (!STEP_MOVES[d.decision].has(effectiveStepStatus(step, now))) throw new Conflict('conflict', `The step is ${effectiveStepStatus(step, now)}.`);
  if (actor.id === request.requester_id) throw new Conflict('conflict', 'The requester cannot approve or deny their own request.');
  if (step.subject_id !== null && step.subject_id !== actor.id) throw new Forbidden('forbidden', 'This step names another approver.');
  if (d.decision === 'approve' && !proves(step.method, d.proof ?? null)) throw new StepUpRequired(step.method, request.id, step.id);
  if (d.decision === 'approve' && steps.some((s) => s.id !== step.id && s.status === 'approved' && s.decided_by === actor.id)) {
    throw new Conflict('conflict', 'An approver approves at most one step of a request.');
  }
  await store.approvals.decideStep(step.id, { status: d.decision === 'approve' ? 'approved' : 'denied', by: actor.id, at: now, reason_code: d.reason_code, reason_note: d.reason_note });
  const settled = await settle(deps, tx, store, request, actor, now);
  return { ...settled, step: settled.steps.find((s) => s.id === step.id)! };
}
