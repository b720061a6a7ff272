/**
 * Review task states and the moves between them, as data (docs/field-mapping.md, "Review tasks").
 * `approved` applies the task's pending change to the user; `rejected` discards it; `resolved` and
 * `dismissed` are terminal. A move to the current status is an idempotent repeat, not a move.
 */

import { REVIEW_STATUSES, type ReviewStatus } from '../store/review-tasks.js';

export { REVIEW_STATUSES, type ReviewStatus };

/** What a move does besides changing the status. */
export type Effect = 'apply_change' | 'discard_change' | null;

export const TRANSITIONS: ReadonlyArray<{ from: ReviewStatus; to: ReviewStatus; effect: Effect }> = [
  { from: 'open', to: 'in_review', effect: null },
  { from: 'open', to: 'approved', effect: 'apply_change' },
  { from: 'open', to: 'rejected', effect: 'discard_change' },
  { from: 'open', to: 'dismissed', effect: 'discard_change' },
  { from: 'in_review', to: 'open', effect: null },
  { from: 'in_review', to: 'approved', effect: 'apply_change' },
  { from: 'in_review', to: 'rejected', effect: 'discard_change' },
  { from: 'in_review', to: 'dismissed', effect: 'discard_change' },
  // Once the change is applied it cannot be taken back here; the task is closed as resolved.
  { from: 'approved', to: 'resolved', effect: null },
  { from: 'rejected', to: 'resolved', effect: null },
  // A rejection may be reconsidered while it is not yet closed.
  { from: 'rejected', to: 'in_review', effect: null },
];

export type Move = { kind: 'repeat' } | { kind: 'move'; effect: Effect } | { kind: 'illegal' };

/** The one check of a requested status against the table. */
export function decide(from: ReviewStatus, to: ReviewStatus): Move {
  if (from === to) return { kind: 'repeat' };
  const t = TRANSITIONS.find((x) => x.from === from && x.to === to);
  return t ? { kind: 'move', effect: t.effect } : { kind: 'illegal' };
}

export const isTerminal = (s: ReviewStatus): boolean => !TRANSITIONS.some((t) => t.from === s);
