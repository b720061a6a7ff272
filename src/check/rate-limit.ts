import type { Redis } from 'ioredis';
import { RateLimited, ServiceUnavailable } from '../errors.js';
import type { Tier } from './keys.js';

/** Checks per minute per key, by tier (a batch costs one per check it carries). */
export const TIER_LIMITS: Readonly<Record<Tier, number>> = Object.freeze({ strict: 60, moderate: 600, lenient: 3000 });
const WINDOW_MS = 60_000;

/**
 * Fixed one-minute windows counted in Redis, shared by every process. Past the tier's limit: 429
 * rate_limit_exceeded with Retry-After until the window ends. Redis unavailable: 503 (fail closed).
 */
export async function consume(redis: Redis, keyId: string, tier: Tier, cost: number, now = Date.now()): Promise<void> {
  const window = Math.floor(now / WINDOW_MS);
  const k = `ck:rl:{${keyId}}:${window}`;
  let used: number;
  try {
    const res = await redis.multi().incrby(k, cost).pexpire(k, WINDOW_MS + 1000).exec();
    used = Number(res?.[0]?.[1]);
  } catch (err) {
    throw new ServiceUnavailable('Rate limit state cannot be read.', 1, err);
  }
  if (used > TIER_LIMITS[tier]) {
    const retryAfter = Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - now) / 1000));
    throw new RateLimited(retryAfter, `The ${tier} tier allows ${TIER_LIMITS[tier]} checks per minute.`);
  }
}
