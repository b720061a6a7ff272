/**
 * Admission of new signatures (issue 19): tell a client pool's concurrency from overload.
 *
 * A closed loop of N connections never has more than N requests in the server, however slow each is:
 * shedding there buys nothing (the client re-sends at once) and turns a healthy service into one that
 * fails half its calls. Overload is an offer the server cannot serve within a request's deadline. So:
 *
 * 1. below `floor` operations ahead, always admit (a client pool of that size is concurrency, not
 *    overload: 192 per process admits a closed loop of 256 connections over 2 processes unconditionally,
 *    with room for an uneven split);
 * 2. past it, admit while the predicted wait for a thread, (ahead ÷ threads) × measured time per
 *    operation, fits in the request's deadline budget `budgetMs`; otherwise refuse at once (fast 503);
 * 3. never past `hardMax` operations ahead (memory bound).
 *
 * Pure: the queue (src/tokens/signer.ts) supplies depth and the measured time per operation.
 */
export interface AdmissionLimits {
  /** Operations queued or running below which a new one is always admitted. */
  floor: number;
  /** Deadline budget for the wait (ms); 0 = no time rule, only floor and hardMax. */
  budgetMs: number;
  /** Hard bound on operations queued or running. */
  hardMax: number;
  threads: number;
}

/** Predicted wait (ms) of an operation that joins `depth` operations ahead on `threads` threads. */
export function predictedWaitMs(depth: number, perOpMs: number, threads: number): number {
  return (depth / Math.max(1, threads)) * perOpMs;
}

export function admitSigning(depth: number, perOpMs: number, l: AdmissionLimits): boolean {
  if (depth >= l.hardMax) return false;
  if (depth < l.floor) return true;
  if (l.budgetMs === 0) return true;
  return predictedWaitMs(depth, perOpMs, l.threads) <= l.budgetMs;
}
