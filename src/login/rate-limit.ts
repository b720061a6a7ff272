import type { Redis } from 'ioredis';
import { RateLimited, ServiceUnavailable } from '../errors.js';

// Fixed window: the first hit starts the window; returns the count and the window's remaining ms.
const SCRIPT = `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl}`;

export interface Limit { key: string; limit: number; windowSeconds: number }

/**
 * Counts one hit against each limit (all in one round trip) and throws 429 rate_limit_exceeded with
 * Retry-After when any is exceeded. Fails closed: without Redis no code is sent.
 */
export async function hit(redis: Redis, limits: Limit[]): Promise<void> {
  let results: Array<[number, number]>;
  try {
    results = await Promise.all(limits.map((l) => redis.eval(SCRIPT, 1, l.key, String(l.windowSeconds * 1000)) as Promise<[number, number]>));
  } catch (err) {
    throw new ServiceUnavailable('Rate limit state cannot be read.', 1, err);
  }
  let retry = 0;
  results.forEach(([n, ttl], i) => { if (n > limits[i]!.limit) retry = Math.max(retry, Math.ceil(ttl / 1000)); });
  if (retry > 0) throw new RateLimited(Math.max(1, retry), 'Too many codes requested; try again later.');
}
