import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { channel, redisChannels } from '../store/redis-keys.js';
import type { Sql } from '../sql.js';
import { evaluateQuotas } from './quota/evaluate.js';
import { rollupUsage } from './usage/rollup.js';

/**
 * The governance run (BullMQ repeatable job `governance` on the log archive queue, every
 * LOG_ARCHIVE_INTERVAL_MS): roll the Redis minute counters into Postgres windows, then evaluate every
 * active quota policy against its current window. `now` is injectable (tests).
 */
export async function runGovernance(sql: Sql, redis: Redis, config: Config, now: number = Date.now()) {
  const usage = await rollupUsage(sql, redis, now);
  const quotas = await evaluateQuotas(sql, redis, channel(config, redisChannels.logEnforcementChanged), now);
  return { ...usage, ...quotas };
}
