/**
 * The credential rotation of a log destination as a state machine (docs/logging.md), pure: what each
 * operator move and the overlap's end do to the destination's rotation state and its credential versions.
 * Storage and the secret backend are elsewhere (src/admin/logging.ts applies a decision, src/logging/destinations.ts
 * retires overdue credentials).
 *
 *   idle ──prepare──▶ prepared ──activate──▶ overlap (a current credential became previous, overlap > 0)
 *                        │  ▲                 idle    (otherwise)
 *                        │  └──prepare (the earlier next is aborted)
 *                        └──abort──▶ overlap (a previous credential is still valid) or idle
 *   overlap ──expire (retire_after passed)──▶ idle
 *
 * Credential versions: next ──activate──▶ current ──activate──▶ previous ──activate or expire──▶ retired;
 * next ──abort or prepare──▶ aborted. At most one version is next, current and previous at a time.
 */
export const ROTATION_STATES = ['idle', 'prepared', 'overlap'] as const;
export type RotationState = (typeof ROTATION_STATES)[number];
export type CredentialStatus = 'next' | 'current' | 'previous' | 'retired' | 'aborted';

/** What the machine reads of a destination: its rotation state and its credential versions. */
export interface CredentialState {
  rotation_state: RotationState;
  credentials: ReadonlyArray<{ version: number; status: CredentialStatus; retire_after: number | string | null }>;
}

export type CredentialEvent =
  | { kind: 'prepare' }
  /** `overlapMs`: how long the replaced credential stays valid (0: retired at once). */
  | { kind: 'activate'; now: number; overlapMs: number }
  | { kind: 'abort' }
  /** The clock passing: previous credentials whose retire_after is due are retired. */
  | { kind: 'expire'; now: number };

/** One credential version's new status and timestamps, as the repository's setCredential takes it. */
export interface CredentialChange { version: number; status: CredentialStatus; activated_at?: number; retire_after?: number; retired_at?: number }

export type Decision =
  | { kind: 'refused'; reason: 'not_prepared' }
  /**
   * `insert`: the version of a new `next` credential to store; `rotation_state`: the destination's new
   * state, or null when the destination row is left alone.
   */
  | { kind: 'apply'; changes: CredentialChange[]; insert: number | null; rotation_state: RotationState | null };

type Step<K extends CredentialEvent['kind']> = (s: CredentialState, e: Extract<CredentialEvent, { kind: K }>) => Decision;

const has = (s: CredentialState, status: CredentialStatus) => s.credentials.some((c) => c.status === status);
const versionsIn = (s: CredentialState, status: CredentialStatus) => s.credentials.filter((c) => c.status === status).map((c) => c.version);
const NOT_PREPARED: Decision = { kind: 'refused', reason: 'not_prepared' };

/** The moves, one per event. */
const STEPS: { [K in CredentialEvent['kind']]: Step<K> } = {
  // A new next credential replaces any earlier prepared one; versions only grow.
  prepare: (s) => ({
    kind: 'apply', changes: versionsIn(s, 'next').map((version) => ({ version, status: 'aborted' })),
    insert: Math.max(0, ...s.credentials.map((c) => c.version)) + 1, rotation_state: 'prepared',
  }),
  // The next becomes current; the current becomes previous for the overlap (retired at once without one);
  // an earlier previous is retired, so at most one credential is ever valid besides the current one.
  activate: (s, e) => {
    const next = s.credentials.find((c) => c.status === 'next');
    if (!next) return NOT_PREPARED;
    const overlap = e.overlapMs > 0;
    const changes: CredentialChange[] = [
      ...versionsIn(s, 'previous').map((version): CredentialChange => ({ version, status: 'retired', retired_at: e.now })),
      ...versionsIn(s, 'current').map((version): CredentialChange => (overlap
        ? { version, status: 'previous', retire_after: e.now + e.overlapMs }
        : { version, status: 'retired', retired_at: e.now })),
      { version: next.version, status: 'current', activated_at: e.now },
    ];
    return { kind: 'apply', changes, insert: null, rotation_state: has(s, 'current') && overlap ? 'overlap' : 'idle' };
  },
  abort: (s) => {
    const next = s.credentials.find((c) => c.status === 'next');
    if (!next) return NOT_PREPARED;
    return { kind: 'apply', changes: [{ version: next.version, status: 'aborted' }], insert: null, rotation_state: has(s, 'previous') ? 'overlap' : 'idle' };
  },
  // Only the overlap state ends here; a rotation prepared meanwhile stays prepared.
  expire: (s, e) => {
    const due = s.credentials.filter((c) => c.status === 'previous' && c.retire_after !== null && Number(c.retire_after) <= e.now);
    return {
      kind: 'apply', changes: due.map((c) => ({ version: c.version, status: 'retired', retired_at: e.now })), insert: null,
      rotation_state: due.length > 0 && s.rotation_state === 'overlap' ? 'idle' : null,
    };
  },
};

/** The one check of an event against a destination's credential state. */
export function decide(s: CredentialState, e: CredentialEvent): Decision {
  return (STEPS[e.kind] as Step<typeof e.kind>)(s, e as never);
}
