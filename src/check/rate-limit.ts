import { redisKeys } from '../store/redis-keys.js';
import type { Redis } from 'ioredis';
import { hitLimits } from '../store/rate-limit.js';
import type { Tier } from './keys.js';

/** Checks per minute per key, by tier (a batch costs one per check it carries). */
export const TIER_LIMITS: Readonly<Record<Tier, number>> = Object.freeze({ strict: 60, moderate: 600, lenient: 3000 });
const WINDOW_MS = 60_000;

/** The counter of one key in one clock minute (hash tag: the key id). */
const windowKey = redisKeys.checkRate;

/**
 * Clock-aligned one-minute windows counted in Redis, shared by every process. Past the tier's limit:
 * 429 rate_limit_exceeded with Retry-After until the minute ends. Redis unavailable: 503 (fail closed).
 */
export function consume(redis: Redis, keyId: string, tier: Tier, cost: number, now = Date.now()): Promise<void> {
  const window = Math.floor(now / WINDOW_MS);
  return hitLimits(redis, [{ key: windowKey(keyId, window), limit: TIER_LIMITS[tier], windowMs: (window + 1) * WINDOW_MS - now, cost }],
    `The ${tier} tier allows ${TIER_LIMITS[tier]} checks per minute.`);
}
