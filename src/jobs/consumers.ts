import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Config } from '../config.js';
import { jobTelemetry } from '../tracing/jobs.js';
import { tracingOn } from '../tracing/tracer.js';
import { validators } from '../generated/index.js';
import type { Logger } from '../log.js';
import { createRedis } from '../store/redis.js';
import { queuePrefix } from '../store/redis-keys.js';
import { ms, type JobRunner, type QueueDecl, type WorkerRole } from './declare.js';
import type { JobQueues } from './queues.js';
import { readQueue } from './queue-metrics.js';
import { trackQueue } from '../metrics.js';
import { JOBS, QUEUES, jobsOn, queuesOf, type JobName, type RoleContexts } from './table.js';

export interface RunningConsumers { close(): Promise<void> }

/**
 * Starts the consumers of every queue of `role`, as the table declares them, over one worker connection
 * (retries forever, as BullMQ workers require). Each job's data is checked against its schema before its
 * run function sees it; data the schema refuses fails the job for good. Unless `schedules` is false,
 * the role's periodic jobs are registered too (by the role's one process under the supervisor).
 */
export async function startConsumers<R extends WorkerRole>(role: R, ctx: RoleContexts[R], deps: { config: Config; log: Logger; jobs: JobQueues; schedules?: boolean }): Promise<RunningConsumers> {
  const { config, log } = deps;
  const connection = createRedis(config, 'worker');
  const workers: Worker[] = [];
  for (const q of queuesOf(role)) {
    const decl: QueueDecl = QUEUES[q];
    const kinds = jobsOn(q);
    const runners = new Map<string, { key: JobName; run: JobRunner<unknown, RoleContexts[R]> }>();
    for (const k of kinds) runners.set(JOBS[k].name, { key: k, run: (await JOBS[k].run()) as unknown as JobRunner<unknown, RoleContexts[R]> });
    // A queue with one kind of job runs it whatever name its producer gave it.
    const only = kinds.length === 1 ? runners.get(JOBS[kinds[0]!].name) : undefined;
    const w = new Worker(q, async (job: Job, token?: string) => {
      const r = only ?? runners.get(job.name);
      if (!r) throw new UnrecoverableError(`no job ${job.name} on queue ${q}`);
      const data = job.data ?? {};
      if (!validators[JOBS[r.key].schema]!(data)) throw new UnrecoverableError(`job data refused by ${JOBS[r.key].schema}`);
      return r.run(data, ctx, job, token);
    }, {
      connection, prefix: queuePrefix(config),
      // With tracing on, each job runs in a span continuing the trace of the request that added it.
      ...(tracingOn ? { telemetry: jobTelemetry() } : {}),
      concurrency: typeof decl.concurrency === 'function' ? decl.concurrency(config) : decl.concurrency,
      ...(decl.lockDuration !== undefined ? { lockDuration: ms(decl.lockDuration, config) } : {}),
      ...(decl.stalledInterval !== undefined ? { stalledInterval: ms(decl.stalledInterval, config) } : {}),
      ...(decl.maxStalledCount !== undefined ? { maxStalledCount: decl.maxStalledCount } : {}),
    });
    w.on('error', (err) => log.warn({ queue: q, err: err.message }, 'queue consumer error'));
    // Never log job data (addresses, codes): the job id is enough to correlate. Driver errors can quote
    // row values: for those queues only the error's code is logged.
    w.on('failed', (j, err) => log.warn({ queue: q, job: j?.id, name: j?.name, attempts: j?.attemptsMade,
      err: decl.logError === 'code' ? (err as { code?: string }).code ?? err.name : err.message }, 'job attempt failed'));
    workers.push(w);
  }
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  // This role's queues are reported by this process at scrape time (each queue by one process).
  const untrack = queuesOf(role).map((q) => trackQueue(q, () => readQueue(deps.jobs, q)));
  if (deps.schedules !== false) await registerSchedules(role, deps.jobs, config);
  let closing: Promise<void> | undefined;
  return {
    close: () => (closing ??= (async () => {
      for (const u of untrack) u();
      await Promise.allSettled(workers.map((w) => w.close()));
      await connection.quit().catch(() => connection.disconnect());
    })()),
  };
}

/** Registers (or updates: upserting again only changes the interval) the job schedulers of the periodic jobs `role` consumes. */
export async function registerSchedules(role: WorkerRole, jobs: JobQueues, config: Config): Promise<void> {
  for (const k of Object.keys(JOBS) as JobName[]) {
    const d = JOBS[k];
    if (!('schedule' in d) || !d.schedule || QUEUES[d.queue].role !== role) continue;
    await (await jobs.queue(d.queue)).upsertJobScheduler(d.schedule.id, { every: ms(d.schedule.every, config) }, { name: d.name, opts: d.options });
  }
}
