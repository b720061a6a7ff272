import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { channel, redisChannels } from '../store/redis-keys.js';
import { closeRedis, createRedis } from '../store/redis.js';
import { createSql, type Sql } from '../sql.js';
import { TenantFence, type TenantTombstones } from '../tenants/fence.js';
import { LogPipeline, type TokenLoggingLookup } from './pipeline.js';
import { QuotaAdmission } from './quota/admission.js';
import type { LogAdmission, UsageMeter } from './types.js';
import { RedisUsageMeter } from './usage/meter.js';

export interface Governance {
  admission: LogAdmission;
  meter: UsageMeter;
  /** The tombstoned tenants (deleting, deleted), in memory: nothing is counted or buffered for them. */
  fence: TenantTombstones;
  /** Reloads enforcement now (the evaluating process, after a run). */
  refresh(): Promise<void>;
  /** Flushes the meter now. */
  flush(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The one place the pipeline's governance seams are chosen: a meter that counts in memory and flushes
 * to Redis minute counters every LOG_FLUSH_MS, and an admission that answers from the latest quota
 * evaluations held in memory (refreshed every LOG_ARCHIVE_INTERVAL_MS, and on a pub/sub notice), both
 * fenced by the tombstoned tenants held in memory (refreshed likewise, and on a tenant change notice). A
 * lifecycle resource: its own small Postgres pool and Redis connections, opened by `start`.
 */
export function governance(config: Config, log: Logger): Governance {
  let sql: Sql | undefined;
  const redis = createRedis(config, 'cache');
  redis.on('error', () => {});
  const sub = createRedis(config, 'subscriber');
  sub.on('error', () => {});
  sql = createSql(config, { max: 2 });
  const refreshMs = Math.max(1000, config.logArchiveIntervalMs);
  const fence = new TenantFence(sql, log, refreshMs);
  const meter = new RedisUsageMeter(redis, log, config.logFlushMs, Date.now, fence);
  const admission = new QuotaAdmission(sql, log, refreshMs, Date.now);
  let closing: Promise<void> | undefined;
  return {
    admission, meter, fence,
    refresh: () => admission.refresh(),
    flush: () => meter.flush(),
    async start() {
      await fence.subscribe(sub, channel(config, redisChannels.tenantsChanged)).catch((err: Error) => log.warn({ err: err.message }, 'tenant change notices not subscribed'));
      await fence.start();
      meter.start();
      await admission.subscribe(sub, channel(config, redisChannels.logEnforcementChanged)).catch((err: Error) => log.warn({ err: err.message }, 'log enforcement notices not subscribed'));
      await admission.start();
    },
    close: () => (closing ??= (async () => {
      await admission.close();
      await meter.close();
      fence.close();
      await Promise.allSettled([closeRedis(redis), closeRedis(sub), sql!.end({ timeout: 5 })]);
    })()),
  };
}

/** The log pipeline of a process, with the governance above (both lifecycle resources; register the governance first, so it closes last). */
export function createLogPipeline(config: Config, sql: Sql, log: Logger, tokenLogging: TokenLoggingLookup): { pipeline: LogPipeline; governance: Governance } {
  const g = governance(config, log);
  const pipeline = new LogPipeline(sql, g.admission, g.meter, log, { flushMs: config.logFlushMs, bufferMax: config.logBufferMax, tokenLogging, fence: g.fence });
  return { pipeline, governance: g };
}
