import { Queue, Worker } from 'bullmq';
import { pathToFileURL } from 'node:url';
import { loadConfig, type Config } from '../src/config.js';
import { createLogger, type Logger } from '../src/log.js';
import { runArchive } from '../src/logging/archive.js';
import { checkHealth, retireOverdue } from '../src/logging/destinations.js';
import { LOG_ARCHIVE_QUEUE, LOG_REWRAP_QUEUE, REWRAP_ATTEMPTS, runRewrap, type RewrapJobData } from '../src/logging/rewrap.js';
import { runGovernance } from '../src/logging/governance-job.js';
import { deliverDue, LOG_DELIVERY_QUEUE } from '../src/logging/delivery.js';
import { governance } from '../src/logging/wiring.js';
import { Store } from '../src/store/index.js';
import { archiveQueries } from '../src/store/log-archive.js';
import { closeRedis, createRedis } from '../src/store/redis.js';
import { queuePrefix } from '../src/store/redis-keys.js';
import { createSql } from '../src/store/sql.js';
import { TOMBSTONE_STATUSES } from '../src/store/tenants.js';
import { PiiVault } from '../src/store/pii-vault.js';
import { configureFieldSealing } from '../src/pii/fields.js';

export interface RunningLogWorker { close(): Promise<void> }

/**
 * The log worker process (role `log-worker`): a BullMQ repeatable job that chunks appended log records
 * into encrypted archive objects every LOG_ARCHIVE_INTERVAL_MS, another that health-checks destinations
 * (and retires credentials whose overlap ended) every LOG_DESTINATION_HEALTH_INTERVAL_MS, the consumer
 * of rewrap jobs, and the http_sink delivery pass (every LOG_DELIVERY_INTERVAL_MS and after each archive
 * run that committed chunks). Started by the supervisor, and in-process or as a child by tests.
 */
export async function startLogWorker(config: Config, log: Logger): Promise<RunningLogWorker> {
  const sql = createSql(config);
  configureFieldSealing(config.keyEncryptionKey);
  const producer = createRedis(config, 'producer');
  const connection = createRedis(config, 'worker');
  const prefix = queuePrefix(config);
  const g = governance(config, log);
  await g.start();
  const cache = createRedis(config, 'cache');
  cache.on('error', () => {});
  const store = new Store(sql, PiiVault.fromConfig(config, sql));
  const queue = new Queue(LOG_ARCHIVE_QUEUE, { connection: producer, prefix });
  const rewrapQueue = new Queue<RewrapJobData>(LOG_REWRAP_QUEUE, { connection: producer, prefix });
  const deliveryQueue = new Queue(LOG_DELIVERY_QUEUE, { connection: producer, prefix });
  queue.on('error', () => {});
  rewrapQueue.on('error', () => {});
  deliveryQueue.on('error', () => {});

  const archive = new Worker(LOG_ARCHIVE_QUEUE, async (job) => {
    if (job.name === 'health') return health();
    if (job.name === 'governance') {
      await g.flush();
      const r = await runGovernance(sql, cache, config);
      if (r.changed) await g.refresh();
      return r;
    }
    const r = await runArchive({ sql, config, log, admission: g.admission, meter: g.meter });
    // Rewrap jobs queued in Postgres whose BullMQ job was lost (or never added) are added again; the job id de-duplicates.
    // Not for a tombstoned tenant: its purge removes its jobs and must not find them queued again.
    const queued = await sql<Array<{ tenant_id: string; id: string }>>`select j.tenant_id, j.id from log_rewrap_jobs j join tenants t on t.id = j.tenant_id
      where j.status in ('queued', 'running') and t.status <> all(${TOMBSTONE_STATUSES as string[]}::text[]) order by j.created_at limit 1000`;
    for (const j of queued) await rewrapQueue.add('rewrap', { tenantId: j.tenant_id, jobId: j.id }, { jobId: j.id, attempts: REWRAP_ATTEMPTS, backoff: { type: 'exponential', delay: 500 }, removeOnComplete: true, removeOnFail: 1000 });
    // New chunks are owed to the http_sinks now, not at the next scheduled pass (the job id de-duplicates).
    if (r?.committed) await deliveryQueue.add('deliver', {}, { jobId: 'deliver-now', removeOnComplete: true, removeOnFail: true });
    return r;
  }, { connection, prefix, concurrency: 1 });
  archive.on('error', (err) => log.warn({ err: err.message }, 'log archive worker error'));
  archive.on('failed', (job, err) => log.warn({ job: job?.name, err: err.message }, 'log archive run failed'));

  async function health(): Promise<number> {
    const dests = await archiveQueries.allDestinations(sql);
    for (const d of dests) {
      const repo = store.forTenant(d.tenant_id).logArchive;
      await retireOverdue(repo, d, Date.now());
      let failed: boolean;
      if (d.kind === 'http_sink') failed = await archiveQueries.lastAttemptFailed(sql, d);
      else {
        const [last] = await sql<Array<{ ok: boolean }>>`select (e->>'ok')::boolean as ok from log_chunks c, jsonb_array_elements(c.delivered) e
          where c.status = 'committed' and e->>'destination_id' = ${d.id} order by c.committed_at desc limit 1`;
        failed = last ? !last.ok : false;
      }
      const h = await checkHealth(config, repo, d, failed);
      await repo.setHealth(d.id, h.health, h.detail);
    }
    return dests.length;
  }

  // Rewrap: a killed process's job is stalled and taken up again after its lock lapses (USER_JOB_LOCK_MS).
  const rewrap = new Worker<RewrapJobData>(LOG_REWRAP_QUEUE, async (job) => {
    const { tenantId, jobId } = job.data;
    try {
      return await runRewrap({ store, sql, config, log }, tenantId, jobId);
    } catch (err) {
      if (job.attemptsMade + 1 >= REWRAP_ATTEMPTS) await store.forTenant(tenantId).logArchive.setRewrapStatus(jobId, 'failed', { error: (err as Error).message.slice(0, 200) }).catch(() => {});
      throw err;
    }
  }, { connection, prefix, concurrency: 2, lockDuration: config.userJobLockMs, stalledInterval: Math.max(1000, Math.floor(config.userJobLockMs / 2)), maxStalledCount: 10 });
  rewrap.on('error', (err) => log.warn({ err: err.message }, 'log rewrap worker error'));
  rewrap.on('failed', (job, err) => log.warn({ job: job?.id, err: err.message }, 'log rewrap attempt failed'));

  // http_sink deliveries: due rows of log_deliveries (durable in Postgres; BullMQ only paces the passes).
  const delivery = new Worker(LOG_DELIVERY_QUEUE, () => deliverDue({ sql, store, config, log }), { connection, prefix, concurrency: 1 });
  delivery.on('error', (err) => log.warn({ err: err.message }, 'log delivery worker error'));
  delivery.on('failed', (_job, err) => log.warn({ err: err.message }, 'log delivery pass failed'));
  await Promise.all([archive.waitUntilReady(), rewrap.waitUntilReady(), delivery.waitUntilReady()]);
  await queue.upsertJobScheduler('log-archive', { every: config.logArchiveIntervalMs }, { name: 'archive', opts: { removeOnComplete: true, removeOnFail: 100 } });
  await queue.upsertJobScheduler('log-governance', { every: config.logArchiveIntervalMs }, { name: 'governance', opts: { removeOnComplete: true, removeOnFail: 100 } });
  await queue.upsertJobScheduler('log-destination-health', { every: config.logDestinationHealthMs }, { name: 'health', opts: { removeOnComplete: true, removeOnFail: 100 } });
  await deliveryQueue.upsertJobScheduler('log-delivery', { every: config.logDeliveryIntervalMs }, { name: 'deliver', opts: { removeOnComplete: true, removeOnFail: 100 } });
  let closing: Promise<void> | undefined;
  return {
    close: () => (closing ??= (async () => {
      await Promise.allSettled([archive.close(), rewrap.close(), delivery.close()]);
      await Promise.allSettled([queue.close(), rewrapQueue.close(), deliveryQueue.close(), g.close()]);
      await Promise.allSettled([closeRedis(producer), closeRedis(cache), connection.quit().catch(() => connection.disconnect())]);
      await sql.end({ timeout: 5 });
    })()),
  };
}

// `node dist/workers/log-worker.js`: run just this worker (used by the crash tests). Configuration from the environment.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const config = loadConfig();
  const running = await startLogWorker(config, createLogger(config.logLevel, { role: 'log-worker' }));
  process.send?.({ type: 'svc:ready' });
  const stop = () => { void running.close().then(() => process.exit(0)); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
