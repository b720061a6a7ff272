import { createHash } from 'node:crypto';
import { Conflict, NotFound } from '../errors.js';
import type { TenantStore } from '../store/index.js';
import type { ReviewTaskRow } from '../store/review-tasks.js';
import type { TxSql } from '../sql.js';
import { applyUserChange } from './apply-change.js';
import { decide, type ReviewStatus } from './review-states.js';
import { reviewTaskView } from './review-view.js';

export interface TransitionRequest { status: ReviewStatus; assignedTo?: string | null | undefined; reasonCodes?: string[] | undefined }
export interface TransitionResult { id: string; previousStatus: ReviewStatus; status: ReviewStatus; idempotent: boolean }

export const reviewTaskNotFound = () => new NotFound('not_found', 'No such review task.');

/** Fingerprint of a transition body for its Idempotency-Key; an omitted assignee differs from a null one. */
export function bodyHash(b: TransitionRequest): string {
  const canon = JSON.stringify([b.status, b.assignedTo === undefined ? { omitted: true } : b.assignedTo, b.reasonCodes ?? null]);
  return createHash('sha256').update(canon).digest('base64url');
}

const same = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** True when the request asks for nothing the task does not already say. */
export function isRepeat(t: ReviewTaskRow, b: TransitionRequest): boolean {
  return t.status === b.status && (b.assignedTo === undefined || b.assignedTo === t.assigned_to) && (b.reasonCodes === undefined || same(b.reasonCodes, t.reason_codes));
}

/**
 * Moves a locked task per the transition table (409 conflict on an illegal move), applying or
 * discarding its pending change; a request that asks for the current state changes nothing.
 */
export async function transitionReviewTask(tx: TxSql, store: TenantStore, id: string, b: TransitionRequest)
  : Promise<{ result: TransitionResult; before: ReviewTaskRow; after: ReviewTaskRow; userId?: string }> {
  const cur = await store.reviewTasks.get(id, { lock: true });
  if (!cur) throw reviewTaskNotFound();
  if (isRepeat(cur, b)) return { result: { id, previousStatus: cur.status, status: cur.status, idempotent: true }, before: cur, after: cur };
  const move = decide(cur.status, b.status);
  if (move.kind === 'illegal') throw new Conflict('conflict', `A review task cannot move from ${cur.status} to ${b.status}.`);
  let userId: string | undefined;
  if (move.kind === 'move' && move.effect === 'apply_change' && cur.pending_change) {
    userId = (await applyUserChange(tx, store, cur.user_id, cur.pending_change)).user.id;
  }
  const clear = move.kind === 'move' && move.effect !== null;
  const next = (await store.reviewTasks.transition(id, b.status, b.assignedTo, b.reasonCodes, clear))!;
  return { result: { id, previousStatus: cur.status, status: next.status, idempotent: false }, before: cur, after: next, ...(userId ? { userId } : {}) };
}

export { reviewTaskView };
