import { Queue, Worker } from 'bullmq';
import type { Config } from '../src/config.js';
import type { Logger } from '../src/log.js';
import { healthTtlMs, runHealthChecks } from '../src/plugins/health.js';
import { closeRedis, createRedis } from '../src/store/redis.js';
import { queuePrefix } from '../src/store/redis-keys.js';
import { createSql } from '../src/store/sql.js';

export const PLUGIN_HEALTH_QUEUE = 'plugin-health';

export interface RunningJobsWorker { close(): Promise<void> }

/**
 * The jobs worker process (role `jobs-worker`): a BullMQ repeatable job that runs every plugin's health
 * check each PLUGIN_HEALTH_INTERVAL_MS and caches the results in Redis. Started by the supervisor, and
 * in-process by tests.
 */
export async function startJobsWorker(config: Config, log: Logger): Promise<RunningJobsWorker> {
  const sql = createSql(config);
  const cache = createRedis(config, 'cache');
  const producer = createRedis(config, 'producer');
  const connection = createRedis(config, 'worker');
  cache.on('error', () => {});
  const prefix = queuePrefix(config);
  const queue = new Queue(PLUGIN_HEALTH_QUEUE, { connection: producer, prefix });
  queue.on('error', () => {});
  const ttl = healthTtlMs(config.pluginHealthIntervalMs);
  const worker = new Worker(PLUGIN_HEALTH_QUEUE, async () => {
    const r = await runHealthChecks({ config, sql, queueRedis: connection }, cache, ttl);
    return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.status]));
  }, { connection, prefix, concurrency: 1 });
  worker.on('error', (err) => log.warn({ err: err.message }, 'jobs worker error'));
  worker.on('failed', (job, err) => log.warn({ job: job?.id, err: err.message }, 'plugin health job failed'));
  await worker.waitUntilReady();
  // One scheduler for every worker process: upserting it again only updates its interval.
  await queue.upsertJobScheduler('plugin-health', { every: config.pluginHealthIntervalMs }, { name: 'check', opts: { removeOnComplete: true, removeOnFail: 100 } });
  let closing: Promise<void> | undefined;
  return {
    close: () => (closing ??= (async () => {
      await worker.close();
      await queue.close().catch(() => {});
      await Promise.allSettled([closeRedis(cache), closeRedis(producer), connection.quit().catch(() => connection.disconnect())]);
      await sql.end({ timeout: 5 });
    })()),
  };
}
