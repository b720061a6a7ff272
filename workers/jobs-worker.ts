import { Queue, Worker } from 'bullmq';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import type { Config } from '../src/config.js';
import type { Logger } from '../src/log.js';
import { healthTtlMs, runHealthChecks } from '../src/plugins/health.js';
import { closeRedis, createRedis } from '../src/store/redis.js';
import { queuePrefix } from '../src/store/redis-keys.js';
import { createSql } from '../src/store/sql.js';
import { Store } from '../src/store/index.js';
import { USER_JOB_ATTEMPTS, USER_JOBS_QUEUE, type UserJobData } from '../src/imports/queue.js';
import { runImport } from '../src/imports/run-import.js';
import { runExport } from '../src/imports/run-export.js';
import { PiiVault } from '../src/store/pii-vault.js';
import { configureFieldSealing } from '../src/pii/fields.js';
import { followLookupKeys } from '../src/lookup-keys/wiring.js';
import { LOOKUP_ROTATION_QUEUE, RotationQueue, type RotationJobData } from '../src/lookup-keys/queue.js';
import { completeAfterGrace, driveRotation, type WorkDeps } from '../src/lookup-keys/work.js';
import { lookupHmacRepo } from '../src/lookup-keys/repository.js';
import { hasJobWork } from '../src/lookup-keys/states.js';

export const PLUGIN_HEALTH_QUEUE = 'plugin-health';

export interface RunningJobsWorker { close(): Promise<void> }

/**
 * The jobs worker process (role `jobs-worker`): a BullMQ repeatable job that runs every plugin's health
 * check each PLUGIN_HEALTH_INTERVAL_MS and caches the results in Redis. Started by the supervisor, and
 * in-process by tests.
 */
export async function startJobsWorker(config: Config, log: Logger): Promise<RunningJobsWorker> {
  const sql = createSql(config);
  configureFieldSealing(config.keyEncryptionKey);
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
  // Long jobs that resume at a checkpoint: one at a time; a killed process's job is stalled and taken up
  // again once its lock (USER_JOB_LOCK_MS) lapses.
  const resumable = { connection, prefix, concurrency: 1, lockDuration: config.userJobLockMs, stalledInterval: Math.max(1000, Math.floor(config.userJobLockMs / 2)), maxStalledCount: 10 };
  const vault = PiiVault.fromConfig(config, sql);
  // Imports write users' index entries: under the keys of the lookup-key rotation's current state.
  const keys = followLookupKeys({ config, sql, redis: cache, vault, role: 'jobs-worker', log });
  await keys.start();
  const store = new Store(sql, vault);
  // Lookup-key rotations: the reindex, verification, rollback and cleanup of src/lookup-keys/work.ts,
  // under a lease; a killed worker's job is taken up again when its lock lapses and resumes at the checkpoint.
  const rotationQueue = new RotationQueue(config);
  const work: WorkDeps = {
    sql, vault, redis: cache, kek: config.keyEncryptionKey, log, ownerId: keys.id,
    leaseMs: config.lookupReindexLeaseMs, batch: config.lookupReindexBatch, liveMs: config.lookupKeyringLiveMs,
    scheduleGrace: (operationId, delayMs) => rotationQueue.add({ operationId, kind: 'grace' }, delayMs),
  };
  const rotations = new Worker<RotationJobData>(LOOKUP_ROTATION_QUEUE, async (job) => {
    const { operationId, kind } = job.data;
    if (kind === 'work') return driveRotation(work, operationId);
    const r = await completeAfterGrace(work, operationId);
    if (r === 'behind') throw new Error('a process does not apply grace yet');
    if (r === 'not_yet') {
      const row = await lookupHmacRepo.get(sql, operationId);
      await rotationQueue.add({ operationId, kind: 'grace' }, (row?.grace_expires_at ?? 0) - Date.now());
    }
    return r;
  }, resumable);
  rotations.on('error', (err) => log.warn({ err: err.message }, 'lookup rotation worker error'));
  rotations.on('failed', (job, err) => log.warn({ job: job?.id, attempts: job?.attemptsMade, err: err.message }, 'lookup rotation job attempt failed'));
  await rotations.waitUntilReady();
  // Work that a lost enqueue left behind (Redis down when a move committed) is queued again at start.
  const live = await lookupHmacRepo.live(sql);
  if (live && hasJobWork(live.state)) await rotationQueue.add({ operationId: live.operation_id, kind: 'work' }).catch(() => {});
  if (live?.state === 'grace') await rotationQueue.add({ operationId: live.operation_id, kind: 'grace' }, (live.grace_expires_at ?? 0) - Date.now()).catch(() => {});
  // Imports and exports: one job at a time per process (each batch is a transaction). A killed
  // process's job is stalled and taken up again after the lock lapses; the import resumes at its checkpoint.
  const userJobs = new Worker<UserJobData>(USER_JOBS_QUEUE, async (job) => {
    const { tenantId, jobId, kind } = job.data;
    try {
      if (kind === 'import') return (await runImport(store, tenantId, jobId)).status;
      return await runExport(store, tenantId, jobId);
    } catch (err) {
      if (job.attemptsMade + 1 >= USER_JOB_ATTEMPTS) {
        await store.forTenant(tenantId).userJobs.finish(jobId, 'failed', { errorCode: kind === 'import' ? 'job_failed' : 'export_failed', errorMessage: 'the job failed; see the worker log' }).catch(() => {});
      }
      throw err;
    }
  }, resumable);
  userJobs.on('error', (err) => log.warn({ err: err.message }, 'user jobs worker error'));
  // Driver errors can quote row values (a unique violation names the address): log only their code.
  userJobs.on('failed', (job, err) => log.warn({ job: job?.id, attempts: job?.attemptsMade, err: (err as { code?: string }).code ?? err.name }, 'user job attempt failed'));
  await userJobs.waitUntilReady();
  worker.on('failed', (job, err) => log.warn({ job: job?.id, err: err.message }, 'plugin health job failed'));
  await worker.waitUntilReady();
  // One scheduler for every worker process: upserting it again only updates its interval.
  await queue.upsertJobScheduler('plugin-health', { every: config.pluginHealthIntervalMs }, { name: 'check', opts: { removeOnComplete: true, removeOnFail: 100 } });
  let closing: Promise<void> | undefined;
  return {
    close: () => (closing ??= (async () => {
      await Promise.allSettled([worker.close(), userJobs.close(), rotations.close()]);
      await queue.close().catch(() => {});
      await rotationQueue.close();
      await keys.close();
      await Promise.allSettled([closeRedis(cache), closeRedis(producer), connection.quit().catch(() => connection.disconnect())]);
      await sql.end({ timeout: 5 });
    })()),
  };
}

// `node dist/workers/jobs-worker.js`: run just this worker (used by the kill-mid-import test and for
// running jobs apart from the supervisor). Configuration comes from the environment as usual.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const config = loadConfig();
  const running = await startJobsWorker(config, createLogger(config.logLevel, { role: 'jobs-worker' }));
  process.send?.({ type: 'svc:ready' });
  const stop = () => { void running.close().then(() => process.exit(0)); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
