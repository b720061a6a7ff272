/**
 * The lookup-HMAC rotation as a state machine (issue 14 item 5), pure: which keys a process writes and
 * reads the blind index with in each state, which moves an operator may make, and what a verification
 * outcome leads to. Storage, processes and jobs are elsewhere (src/pii/lookup-keys/).
 *
 *   planned ──advance──▶ distributing ──advance──▶ activation_dual_write ──advance──▶ dual_read
 *      (every process holds the candidate)  (every process writes both)       (inventory frozen at the cutoff)
 *   dual_read ──advance──▶ reindexing ──job──▶ verifying ──ok──▶ grace ──expiry or advance──▶ complete
 *                               ▲                  │
 *                               └──mismatch (1st, 2nd)┘── 3rd mismatch ──▶ blocked
 *   any state before complete ──abort──▶ blocked (terminal; rolled back to the source key)
 *
 * Every operator move waits until every live process has applied the current state, so two processes
 * are never more than one state apart, and the key sets of adjacent states are compatible.
 */
export const ROTATION_STATES = ['planned', 'distributing', 'activation_dual_write', 'dual_read', 'reindexing', 'verifying', 'grace', 'complete', 'blocked'] as const;
export type RotationState = (typeof ROTATION_STATES)[number];

/** Which generations' keys an index write writes under and a lookup tries. */
export interface KeyUse { write: Array<'source' | 'candidate'>; read: Array<'source' | 'candidate'> }

const SOURCE: KeyUse = { write: ['source'], read: ['source'] };
const BOTH: KeyUse = { write: ['source', 'candidate'], read: ['source', 'candidate'] };
const NEW_WRITES: KeyUse = { write: ['candidate'], read: ['source', 'candidate'] };
const CANDIDATE: KeyUse = { write: ['candidate'], read: ['candidate'] };

/**
 * The keys of a state. `finished` matters only for `blocked`: until its rollback has re-indexed every
 * user under the source key, processes write and read both (a user written under the candidate key
 * alone since dual_read must stay findable); afterwards the source key alone.
 */
export function keyUse(state: RotationState, finished: boolean): KeyUse {
  switch (state) {
    case 'planned': case 'distributing': return SOURCE;
    case 'activation_dual_write': return BOTH;
    case 'dual_read': case 'reindexing': case 'verifying': case 'grace': return NEW_WRITES;
    case 'complete': return CANDIDATE;
    case 'blocked': return finished ? SOURCE : BOTH;
  }
}

/** The move an operator's `advance` makes from a state; null where a job or nothing moves it. */
export function advanceTarget(state: RotationState): RotationState | null {
  switch (state) {
    case 'planned': return 'distributing';
    case 'distributing': return 'activation_dual_write';
    case 'activation_dual_write': return 'dual_read';
    case 'dual_read': return 'reindexing';
    case 'grace': return 'complete';
    default: return null;
  }
}

/** States a rotation may be aborted from (everything not yet terminal). */
export function canAbort(state: RotationState): boolean {
  return state !== 'complete' && state !== 'blocked';
}

/** States the rotation job has work in: reindexing, verifying, a blocked rotation's rollback, a complete one's cleanup (until finished). */
export function hasJobWork(state: RotationState): boolean {
  return state === 'reindexing' || state === 'verifying' || state === 'blocked' || state === 'complete';
}

/** Verifications a rotation may fail before it is blocked. */
export const MAX_VERIFICATION_FAILURES = 3;

/** Where a verification leads: grace when every row checked out; else reindexing again, blocked at the third failure. */
export function afterVerification(attemptsBefore: number, mismatches: number): { state: RotationState; attempts: number } {
  const attempts = attemptsBefore + 1;
  if (mismatches === 0) return { state: 'grace', attempts };
  return { state: attempts >= MAX_VERIFICATION_FAILURES ? 'blocked' : 'reindexing', attempts };
}

/** What a process reports about itself: the rotation and state it applies and the key fingerprints it holds. */
export interface ComponentAck { id: string; role: string; operationId: string | null; state: RotationState | null; finished: boolean; fingerprints: string[]; at: number }

/**
 * Processes that have not yet applied `state` of `operationId` (for `planned`: that do not yet hold the
 * candidate key with the expected fingerprint). An empty answer opens the gate.
 */
export function laggards(acks: readonly ComponentAck[], operationId: string, state: RotationState, finished: boolean, candidateFingerprint: string): ComponentAck[] {
  return acks.filter((a) => a.operationId !== operationId || a.state !== state || a.finished !== finished
    || (state === 'planned' && !a.fingerprints.includes(candidateFingerprint)));
}
