import { pathToFileURL } from 'node:url';
import { runAlone } from './queue-process.js';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../src/config.js';
import type { Logger } from '../src/log.js';
import type { SchemaTypes } from '../src/generated/types.js';
import { startConsumers } from '../src/jobs/consumers.js';
import { JobQueues } from '../src/jobs/queues.js';
import { USER_JOB_ATTEMPTS } from '../src/jobs/table.js';
import { healthTtlMs, runHealthChecks } from '../src/plugins/health.js';
import { closeRedis, createRedis } from '../src/store/redis.js';
import { createSql, type Sql } from '../src/sql.js';
import { Store } from '../src/store/index.js';
import { runImport } from '../src/imports/run-import.js';
import { runExport } from '../src/imports/run-export.js';
import { PiiVault } from '../src/pii/vault.js';
import { configureFieldSealing } from '../src/sealed-fields.js';
import { followLookupKeys } from '../src/pii/lookup-keys/wiring.js';
import { enqueueRotation } from '../src/pii/lookup-keys/queue.js';
import { completeAfterGrace, driveRotation, type WorkDeps } from '../src/pii/lookup-keys/work.js';
import { lookupHmacRepo } from '../src/pii/lookup-keys/repository.js';
import { hasJobWork } from '../src/pii/lookup-keys/states.js';
import { ClientCache } from '../src/clients/cache.js';
import { sweepExpiredApprovals } from '../src/elevation/sweep.js';
import { sweepCredentialEdges } from '../src/principals/sweeper.js';
import { channel, redisChannels } from '../src/store/redis-keys.js';
import { purgeDeleting, type PurgeDeps } from '../src/tenants/purge.js';
import { TenantSettingsCache } from '../src/tenants/settings-cache.js';
import { RevocationStore } from '../src/tokens/revocation.js';

export interface RunningJobsWorker { close(): Promise<void> }

/** What the jobs worker's jobs run with. */
export interface JobsContext { config: Config; log: Logger; sql: Sql; store: Store; cache: Redis; jobs: JobQueues; work: WorkDeps; purge: PurgeDeps }

/** `elevation-sweep`: moves requests, steps and grants past their expiry to expired. */
export function sweepApprovals(_d: unknown, { purge }: JobsContext): Promise<number> {
  return sweepExpiredApprovals(purge);
}

/** `principal-sweep`: applies machine credentials' notBefore and expiresAt to their clients. */
export function sweepCredentials(_d: unknown, { purge }: JobsContext): Promise<number> {
  return sweepCredentialEdges(purge);
}

/** `tenant-purge` (one tenant) and `tenant-purge-resume` (every tenant left `deleting`). */
export function purgeTenants(d: SchemaTypes['jobs.tenant-purge'], { purge, jobs }: JobsContext): Promise<void> {
  return purgeDeleting(purge, jobs.connection, d.tenantId);
}

/** `plugin-health`: runs every plugin's health check and caches the results in Redis. */
export async function checkPlugins(_d: unknown, { config, sql, cache, jobs }: JobsContext): Promise<unknown> {
  const r = await runHealthChecks({ config, sql, queueRedis: jobs.connection }, cache, healthTtlMs(config.pluginHealthIntervalMs));
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.status]));
}

/**
 * `lookup-rotation`: the reindex, verification, rollback and cleanup of src/pii/lookup-keys/work.ts, under a
 * lease; a killed worker's job is taken up again when its lock lapses and resumes at the checkpoint.
 */
export async function runRotation(d: SchemaTypes['jobs.lookup-rotation'], { sql, work, jobs }: JobsContext): Promise<unknown> {
  if (d.kind === 'work') return driveRotation(work, d.operationId);
  const r = await completeAfterGrace(work, d.operationId);
  if (r === 'behind') throw new Error('a process does not apply grace yet');
  if (r === 'not_yet') {
    const row = await lookupHmacRepo.get(sql, d.operationId);
    await enqueueRotation(jobs, { operationId: d.operationId, kind: 'grace' }, (row?.grace_expires_at ?? 0) - Date.now());
  }
  return r;
}

/** `user-job`: an import or an export; an import resumes at its checkpoint. */
export async function runUserJob(d: SchemaTypes['jobs.user-job'], { store }: JobsContext, job: Job): Promise<unknown> {
  const { tenantId, jobId, kind } = d;
  try {
    if (kind === 'import') return (await runImport(store, tenantId, jobId)).status;
    return await runExport(store, tenantId, jobId);
  } catch (err) {
    if (job.attemptsMade + 1 >= USER_JOB_ATTEMPTS) {
      await store.forTenant(tenantId).userJobs.finish(jobId, 'failed', { errorCode: kind === 'import' ? 'job_failed' : 'export_failed', errorMessage: 'the job failed; see the worker log' }).catch(() => {});
    }
    throw err;
  }
}

/**
 * The jobs worker process (role `jobs-worker`): consumes the jobs src/jobs/table.ts gives this role
 * (imports and exports, lookup-key rotations, tenant purges, and the periodic plugin health, elevation
 * expiry and machine credential sweeps). Started by the supervisor, and in-process by tests.
 */
export async function startJobsWorker(config: Config, log: Logger, opts: { schedules?: boolean } = {}): Promise<RunningJobsWorker> {
  const sql = createSql(config);
  configureFieldSealing(config.keyEncryptionKey);
  const cache = createRedis(config, 'cache');
  cache.on('error', () => {});
  const jobs = new JobQueues(config);
  const vault = PiiVault.fromConfig(config, sql);
  // Imports write users' index entries: under the keys of the lookup-key rotation's current state.
  const keys = followLookupKeys({ config, sql, redis: cache, vault, role: 'jobs-worker', log });
  await keys.start();
  const store = new Store(sql, vault);
  const work: WorkDeps = {
    sql, vault, redis: cache, kek: config.keyEncryptionKey, log, ownerId: keys.id,
    leaseMs: config.lookupReindexLeaseMs, batch: config.lookupReindexBatch, liveMs: config.lookupKeyringLiveMs,
    scheduleGrace: (operationId, delayMs) => enqueueRotation(jobs, { operationId, kind: 'grace' }, delayMs),
  };
  // What the sweeps and the purge change in other processes: revocation marks, and the change notices
  // that evict clients and tenant settings from their caches.
  const tokens = {
    revocations: new RevocationStore(cache, sql, log, { acks: config.revocationReplicaAcks, waitMs: config.revocationReplicaWaitMs, retryMs: config.revocationRetryMs }),
    clients: new ClientCache(sql, cache, config.redisPrefix, log),
    tenantSettings: new TenantSettingsCache(sql, cache, channel(config, redisChannels.tenantsChanged), log),
  };
  const purge: PurgeDeps = { sql, redis: cache, config, log, store, tokens };
  const consumers = await startConsumers('jobs-worker', { config, log, sql, store, cache, jobs, work, purge }, { config, log, jobs, schedules: opts.schedules });
  // Work that a lost enqueue left behind (Redis down when a move committed) is queued again at start.
  const live = await lookupHmacRepo.live(sql);
  if (live && hasJobWork(live.state)) await enqueueRotation(jobs, { operationId: live.operation_id, kind: 'work' }).catch(() => {});
  if (live?.state === 'grace') await enqueueRotation(jobs, { operationId: live.operation_id, kind: 'grace' }, (live.grace_expires_at ?? 0) - Date.now()).catch(() => {});
  let closing: Promise<void> | undefined;
  return {
    close: () => (closing ??= (async () => {
      await consumers.close();
      await jobs.close();
      await keys.close();
      await closeRedis(cache);
      await sql.end({ timeout: 5 });
    })()),
  };
}

// `node dist/workers/jobs-worker.js`: run just this worker (used by the kill-mid-import test and for
// running jobs apart from the supervisor). Configuration comes from the environment as usual.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) void runAlone('jobs-worker');
