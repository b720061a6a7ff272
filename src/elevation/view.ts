import type { ApprovalRequestRow, ApprovalStepRow, ElevationGrantRow } from '../store/approvals.js';
import { deriveRequestStatus, effectiveGrantStatus, effectiveStepStatus } from './model.js';

export function stepView(s: ApprovalStepRow, now: number): Record<string, unknown> {
  return {
    id: s.id, step_key: s.step_key, side: s.side, subject_type: s.subject_type, subject_id: s.subject_id, method: s.method,
    status: effectiveStepStatus(s, now), expires_at: Number(s.expires_at), decided_by: s.decided_by,
    decided_at: s.decided_at === null ? null : Number(s.decided_at), reason_code: s.reason_code, reason_note: s.reason_note,
  };
}

export function grantView(g: ElevationGrantRow, now: number): Record<string, unknown> {
  return {
    public_grant_id: g.id, request_id: g.request_id, status: effectiveGrantStatus(g, now), audience: g.audience,
    authorization_details: g.authorization_details, expires_at: Number(g.expires_at), created_at: Number(g.created_at),
    revoked_at: g.revoked_at === null ? null : Number(g.revoked_at), revoke_reason: g.revoke_reason,
  };
}

/** The request summary fields (shared with the approval artifact's `request`). */
export function requestSummary(r: ApprovalRequestRow, status: string): Record<string, unknown> {
  return {
    public_request_id: r.id, investigation_id: r.investigation_id, request_surface: r.request_surface, requested_action: r.requested_action,
    redaction_level: r.redaction_level, status, reason_code: r.reason_code, policy_preset: r.policy_preset,
    ticket_reference: r.ticket_reference, reference: r.reference,
  };
}

/** A request with its steps (`approvals`) and grants, every status as it reads now. */
export function requestView(r: ApprovalRequestRow, steps: ApprovalStepRow[], grants: ElevationGrantRow[], now: number): Record<string, unknown> {
  return {
    ...requestSummary(r, deriveRequestStatus(r, steps, now)),
    target_subject_type: r.target_subject_type, target_subject_id: r.target_subject_id, resource_class: r.resource_class,
    resource_ids: r.resource_ids, reason_note: r.reason_note, partial_access_allowed: r.partial_access_allowed, allow_reexchange: r.allow_reexchange, audience: r.audience,
    requester: { type: r.requester_type, id: r.requester_id, name: r.requester_name },
    expires_at: Number(r.expires_at), created_at: Number(r.created_at), updated_at: Number(r.updated_at),
    approvals: steps.map((s) => stepView(s, now)), grants: grants.map((g) => grantView(g, now)),
  };
}

/** A list item: the request without its steps' and grants' detail. */
export function requestListItem(r: ApprovalRequestRow & { effective_status: string }): Record<string, unknown> {
  const status = r.effective_status;
  return {
    ...requestSummary(r, status), target_subject_type: r.target_subject_type, target_subject_id: r.target_subject_id,
    resource_class: r.resource_class, audience: r.audience, requester: { type: r.requester_type, id: r.requester_id, name: r.requester_name },
    expires_at: Number(r.expires_at), created_at: Number(r.created_at),
  };
}
