import { pathToFileURL } from 'node:url';
import { runAlone } from './queue-process.js';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../src/config.js';
import type { SchemaTypes } from '../src/generated/types.js';
import { startConsumers } from '../src/jobs/consumers.js';
import { JobQueues } from '../src/jobs/queues.js';
import { REWRAP_ATTEMPTS } from '../src/jobs/table.js';
import type { Logger } from '../src/log.js';
import { runArchive } from '../src/logging/archive.js';
import { checkHealth, retireOverdue } from '../src/logging/destinations.js';
import { runRewrap } from '../src/logging/rewrap.js';
import { runGovernance } from '../src/logging/governance-job.js';
import { deliverDue } from '../src/logging/delivery.js';
import { governance as createGovernance, type Governance } from '../src/logging/wiring.js';
import { Store } from '../src/store/index.js';
import { archiveQueries } from '../src/cross-tenant/log-archive.js';
import { closeRedis, createRedis } from '../src/store/redis.js';
import { createSql, type Sql } from '../src/sql.js';
import { PiiVault } from '../src/pii/vault.js';
import { configureFieldSealing } from '../src/sealed-fields.js';

export interface RunningLogWorker { close(): Promise<void> }

/** What the log worker's jobs run with. */
export interface LogContext { sql: Sql; store: Store; config: Config; log: Logger; cache: Redis; g: Governance; jobs: JobQueues }

/** `log-archive`: chunks appended log records into encrypted archive objects. */
export async function archive(_d: unknown, ctx: LogContext): Promise<unknown> {
  const { sql, config, log, g, jobs } = ctx;
  const r = await runArchive({ sql, config, log, admission: g.admission, meter: g.meter });
  // Rewrap jobs queued in Postgres whose BullMQ job was lost (or never added) are added again; the job id de-duplicates.
  // Not for a tombstoned tenant: its purge removes its jobs and must not find them queued again.
  const queued = await archiveQueries.openRewrapJobs(sql);
  for (const j of queued) await jobs.add('log-rewrap', { tenantId: j.tenant_id, jobId: j.id }, { jobId: j.id });
  // New chunks are owed to the http_sinks now, not at the next scheduled pass (the job id de-duplicates).
  if (r?.committed) await jobs.add('log-delivery', {}, { jobId: 'deliver-now', removeOnFail: true });
  return r;
}

/** `log-governance`: usage rollup and quota evaluation. */
export async function governance(_d: unknown, { sql, cache, config, g }: LogContext): Promise<unknown> {
  await g.flush();
  const r = await runGovernance(sql, cache, config);
  if (r.changed) await g.refresh();
  return r;
}

/** `log-destination-health`: health-checks destinations and retires credentials whose overlap ended. */
export async function destinationHealth(_d: unknown, { sql, store, config }: LogContext): Promise<number> {
  const dests = await archiveQueries.allDestinations(sql);
  for (const d of dests) {
    const repo = store.forTenant(d.tenant_id).logArchive;
    await retireOverdue(repo, d, Date.now());
    let failed: boolean;
    if (d.kind === 'http_sink') failed = await archiveQueries.lastAttemptFailed(sql, d);
    else {
      failed = await archiveQueries.lastWriteFailed(sql, d);
    }
    const h = await checkHealth(config, repo, d, failed);
    await repo.setHealth(d.id, h.health, h.detail);
  }
  return dests.length;
}

/** `log-rewrap`: re-encrypts one chunk; a killed process's job is stalled and taken up again after its lock lapses. */
export async function rewrap(d: SchemaTypes['jobs.log-rewrap'], { store, sql, config, log }: LogContext, job: Job): Promise<unknown> {
  try {
    return await runRewrap({ store, sql, config, log }, d.tenantId, d.jobId);
  } catch (err) {
    if (job.attemptsMade + 1 >= REWRAP_ATTEMPTS) await store.forTenant(d.tenantId).logArchive.setRewrapStatus(d.jobId, 'failed', { error: (err as Error).message.slice(0, 200) }).catch(() => {});
    throw err;
  }
}

/** `log-delivery`: one pass over the due http_sink deliveries. */
export function deliverToSinks(_d: unknown, { sql, store, config, log }: LogContext): Promise<unknown> {
  return deliverDue({ sql, store, config, log });
}

/**
 * The log worker process (role `log-worker`): consumes the log jobs of src/jobs/table.ts (archive and
 * governance every LOG_ARCHIVE_INTERVAL_MS, destination health every LOG_DESTINATION_HEALTH_INTERVAL_MS,
 * rewraps, and the http_sink delivery pass every LOG_DELIVERY_INTERVAL_MS and after each archive run that
 * committed chunks). Started by the supervisor, and in-process or as a child by tests.
 */
export async function startLogWorker(config: Config, log: Logger, opts: { schedules?: boolean } = {}): Promise<RunningLogWorker> {
  const sql = createSql(config);
  configureFieldSealing(config.keyEncryptionKey);
  const g = createGovernance(config, log);
  await g.start();
  const cache = createRedis(config, 'cache');
  cache.on('error', () => {});
  const store = new Store(sql, PiiVault.fromConfig(config, sql));
  const jobs = new JobQueues(config);
  const consumers = await startConsumers('log-worker', { sql, store, config, log, cache, g, jobs }, { config, log, jobs, schedules: opts.schedules });
  let closing: Promise<void> | undefined;
  return {
    close: () => (closing ??= (async () => {
      await consumers.close();
      await Promise.allSettled([jobs.close(), g.close()]);
      await closeRedis(cache);
      await sql.end({ timeout: 5 });
    })()),
  };
}

// `node dist/workers/log-worker.js`: run just this worker (used by the crash tests). Configuration from the environment.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) void runAlone('log-worker');
