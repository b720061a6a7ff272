import type { Redis } from 'ioredis';
import { RateLimited, ServiceUnavailable } from '../errors.js';

/**
 * One fixed-window counter: `cost` hits are added to `key`, which lives for `windowMs` from its first
 * hit. A caller wanting clock-aligned windows names the window in the key and passes the time left in it.
 */
export interface WindowLimit { key: string; limit: number; windowMs: number; cost?: number }

// Adds the cost; the first hit starts the window. Returns the count and the window's remaining ms.
const SCRIPT = `local n = redis.call('INCRBY', KEYS[1], ARGV[2])
if n == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl}`;

/**
 * Counts against every limit (one script per key, pipelined, so each key may live on its own Redis
 * Cluster slot) and throws 429 rate_limit_exceeded with Retry-After, until the longest exceeded window
 * ends, when any limit is passed. Fails closed: without Redis the request is refused with 503.
 */
export async function hitLimits(redis: Redis, limits: WindowLimit[], message: string): Promise<void> {
  enforceLimits(await countHits(redis, limits), limits, message);
}

/** What countHits answers: per window, the count after this hit and the window's remaining ms. */
export type HitCounts = Array<[number, number]>;

/**
 * hitLimits' first half: adds the hits (one script per key, sent at once) without judging them, so a
 * caller can send them in the same round trip as reads it needs before it knows the limits (the login's
 * code request counts while it reads the interaction). Only key, window and cost are used.
 */
export async function countHits(redis: Redis, windows: ReadonlyArray<Pick<WindowLimit, 'key' | 'windowMs' | 'cost'>>): Promise<HitCounts> {
  try {
    return await Promise.all(windows.map((l) =>
      redis.eval(SCRIPT, 1, l.key, String(Math.max(1, Math.ceil(l.windowMs))), String(l.cost ?? 1)) as Promise<[number, number]>));
  } catch (err) {
    throw new ServiceUnavailable('Rate limit state cannot be read.', 1, err);
  }
}

/** hitLimits' second half: 429 with Retry-After (the longest exceeded window) when a count passed its limit. */
export function enforceLimits(results: HitCounts, limits: ReadonlyArray<Pick<WindowLimit, 'limit'>>, message: string): void {
  let retry = 0;
  results.forEach(([n, ttl], i) => { if (n > limits[i]!.limit) retry = Math.max(retry, Math.ceil(ttl / 1000)); });
  if (retry > 0) throw new RateLimited(Math.max(1, retry), message);
}

/**
 * A failure budget (brute-force guard) shared by every process through Redis: `refuseWhenSpent` throws
 * 429 rate_limit_exceeded with Retry-After once `limit` failures were recorded in the window, before the
 * credential is even looked at, and `recordFailure` counts one. Fails closed like hitLimits.
 */
export interface FailureBudget { key: string; limit: number; windowMs: number }

export async function refuseWhenSpent(redis: Redis, budgets: FailureBudget[], message: string, preread?: Promise<string | null | undefined>): Promise<void> {
  // A plain GET per budget: ioredis auto-pipelining sends it in the same write as the request's other
  // reads of this tick (a MULTI/EXEC was a round trip of its own on every client authentication).
  // `preread`: a single budget's count already read in another command of this request (undefined or
  // a failure: read it here).
  let counts: Array<string | null>;
  try {
    const pre = preread === undefined || budgets.length !== 1 ? undefined : await preread.catch(() => undefined);
    counts = pre !== undefined ? [pre] : budgets.length === 1 ? [await redis.get(budgets[0]!.key)] : await Promise.all(budgets.map((b) => redis.get(b.key)));
  } catch (err) {
    throw new ServiceUnavailable('Rate limit state cannot be read.', 1, err);
  }
  const spent = budgets.filter((b, i) => Number(counts[i] ?? 0) >= b.limit);
  if (spent.length === 0) return;
  // Only a refusal needs the time left in its window (Retry-After).
  let ttls: number[];
  try {
    ttls = await Promise.all(spent.map((b) => redis.pttl(b.key)));
  } catch (err) {
    throw new ServiceUnavailable('Rate limit state cannot be read.', 1, err);
  }
  throw new RateLimited(Math.max(...ttls.map((ttl) => Math.ceil(Math.max(ttl, 1000) / 1000))), message);
}

export async function recordFailure(redis: Redis, budgets: FailureBudget[]): Promise<void> {
  await Promise.all(budgets.map((b) => redis.eval(SCRIPT, 1, b.key, String(b.windowMs), '1'))).catch(() => {});
}
