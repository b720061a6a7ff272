/**
 * The approval and elevation state machines as data (STYLE 16): pure functions over rows, no I/O.
 * Every read goes through the `effective*` functions, so a row whose expires_at has passed reads as
 * expired before the sweep has moved it.
 */

export type RequestStatus = 'pending' | 'partially_approved' | 'approved' | 'denied' | 'cancelled' | 'expired';
export type StepStatus = 'pending' | 'approved' | 'denied' | 'cancelled' | 'expired';
export type GrantStatus = 'active' | 'expired' | 'revoked';

/** Named policy presets and the lifetime (seconds) of a request made under each (docs/elevation.md). */
export const POLICY_PRESETS: Readonly<Record<string, number>> = {
  support_case_default: 15 * 60,
  security_investigation_default: 5 * 60,
  incident_response_default: 30 * 60,
};
export const DEFAULT_PRESET = 'support_case_default';

/** The security.alert kinds of break-glass use (data.kind). */
export const ALERT_KIND = {
  issued: 'elevation_grant.issued',
  used: 'elevation_grant.used',
  revoked: 'elevation_grant.revoked',
  expired: 'elevation_grant.expired',
} as const;

export const TERMINAL_REQUEST: ReadonlySet<RequestStatus> = new Set(['denied', 'cancelled', 'expired']);

export function effectiveStepStatus(s: { status: string; expires_at: number }, now: number): StepStatus {
  return s.status === 'pending' && Number(s.expires_at) <= now ? 'expired' : (s.status as StepStatus);
}

export function effectiveGrantStatus(g: { status: string; expires_at: number }, now: number): GrantStatus {
  return g.status === 'active' && Number(g.expires_at) <= now ? 'expired' : (g.status as GrantStatus);
}

/**
 * A request's status, derived from its steps in this order: any denied, any cancelled (or the request
 * cancelled), any expired (or the request past expires_at), all approved, some approved, else pending.
 */
export function deriveRequestStatus(r: { cancelled_at: number | null; expires_at: number },
  steps: ReadonlyArray<{ status: string; expires_at: number }>, now: number): RequestStatus {
  const st = steps.map((s) => effectiveStepStatus(s, now));
  if (st.includes('denied')) return 'denied';
  if (r.cancelled_at !== null || st.includes('cancelled')) return 'cancelled';
  if (Number(r.expires_at) <= now || st.includes('expired')) return 'expired';
  if (st.length > 0 && st.every((s) => s === 'approved')) return 'approved';
  if (st.includes('approved')) return 'partially_approved';
  return 'pending';
}

/** Step decisions: the states a step may be moved from by each decision. */
export const STEP_MOVES: Readonly<Record<'approve' | 'deny', ReadonlySet<StepStatus>>> = {
  approve: new Set(['pending']),
  // An approver may withdraw an approval (deny after approving): that denies the request and revokes its grant.
  deny: new Set(['pending', 'approved']),
};

/** Request states from which each request-level move is allowed. */
export const REQUEST_MOVES: Readonly<Record<'decide' | 'cancel', ReadonlySet<RequestStatus>>> = {
  decide: new Set(['pending', 'partially_approved', 'approved']),
  cancel: new Set(['pending', 'partially_approved', 'approved']),
};
