import type { EmailContext } from '../../workers/email-worker.js';
import type { JobsContext } from '../../workers/jobs-worker.js';
import type { LogContext } from '../../workers/log-worker.js';
import type { WebhookContext } from '../../workers/webhook-worker.js';
import { CREDENTIAL_SWEEP_MS } from '../principals/sweeper.js';
import type { JobDecl, JobSchema, QueueDecl, WorkerRole } from './declare.js';

/**
 * Every queue of the deployment and its consumer. Queue names are shared by every deployment; the
 * BullMQ prefix comes from REDIS_PREFIX (src/store/redis-keys.ts queuePrefix), so each test file and
 * each deployment sharing a Redis has its own queues.
 */
export const QUEUES = {
  // Webhook delivery attempts. A crashed worker's active jobs are found stalled after the lock and run again.
  webhooks: { role: 'webhook-worker', concurrency: (c) => c.webhookConcurrency, lockDuration: 15_000, stalledInterval: 5_000, maxStalledCount: 5 },
  // A one-time code is useful for minutes: a crashed worker's active jobs run again within about 15 s
  // (BullMQ's defaults, 30 s + 30 s, let a code arrive a minute late).
  email: { role: 'email-worker', concurrency: (c) => c.emailConcurrency, lockDuration: 10_000, stalledInterval: 5_000, maxStalledCount: 5 },
  // Long jobs that resume at a checkpoint: one at a time; a killed process's job is stalled and taken up
  // again once its lock (USER_JOB_LOCK_MS) lapses. Each import batch is a transaction.
  'user-jobs': { role: 'jobs-worker', concurrency: 1, ...resumable(), logError: 'code' },
  'lookup-hmac-rotation': { role: 'jobs-worker', concurrency: 1, ...resumable() },
  'plugin-health': { role: 'jobs-worker', concurrency: 1 },
  // Archive, governance and destination health share one queue: they never run at the same time.
  'log-archive': { role: 'log-worker', concurrency: 1 },
  'log-rewrap': { role: 'log-worker', concurrency: 2, ...resumable() },
  // http_sink deliveries: the due rows of log_deliveries are durable in Postgres; BullMQ only paces the passes.
  'log-delivery': { role: 'log-worker', concurrency: 1 },
  // Periodic work of the whole deployment: one run per interval, whichever jobs worker takes it.
  'elevation-sweep': { role: 'jobs-worker', concurrency: 1 },
  'principal-sweep': { role: 'jobs-worker', concurrency: 1 },
  // A purge of one tenant at a time; the periodic resume takes up tenants a crash left `deleting`.
  'tenant-purge': { role: 'jobs-worker', concurrency: 1 },
} satisfies Record<string, QueueDecl>;
export type QueueName = keyof typeof QUEUES;

function resumable(): Pick<QueueDecl, 'lockDuration' | 'stalledInterval' | 'maxStalledCount'> {
  return { lockDuration: (c) => c.userJobLockMs, stalledInterval: (c) => Math.max(1000, Math.floor(c.userJobLockMs / 2)), maxStalledCount: 10 };
}

/** What each role hands its jobs' run functions (built once by the role's worker process). */
export interface RoleContexts { 'webhook-worker': WebhookContext; 'email-worker': EmailContext; 'jobs-worker': JobsContext; 'log-worker': LogContext }
type Ctx<Q extends QueueName> = RoleContexts[(typeof QUEUES)[Q]['role']];
const job = <Q extends QueueName, S extends JobSchema>(d: JobDecl<Q, S, Ctx<Q>>): JobDecl<Q, S, Ctx<Q>> => d;
const periodic = { removeOnComplete: true, removeOnFail: 100 } as const;

export const USER_JOB_ATTEMPTS = 3;
export const REWRAP_ATTEMPTS = 5;

/** Every job, declared once: producers, consumers and schedules are all made from this table. */
export const JOBS = {
  'webhook-delivery': job({
    queue: 'webhooks', name: 'deliver', schema: 'jobs.webhook-delivery',
    // Finished jobs are kept briefly only: the outcome lives in Postgres. Attempts here cover infrastructure
    // failures (Postgres down while recording); receiver failures are retried by the delivery's own
    // schedule (src/webhooks/retry.ts) as new jobs.
    options: { removeOnComplete: { age: 3600, count: 10_000 }, removeOnFail: { age: 24 * 3600 }, attempts: 20, backoff: { type: 'exponential', delay: 1000 } },
    run: async () => (await import('../../workers/webhook-worker.js')).deliver,
  }),
  email: job({
    queue: 'email', name: 'email', schema: 'jobs.email',
    // A code is useless after its TTL, so the job is retried briefly and forgotten at once.
    options: { removeOnComplete: true, removeOnFail: { age: 3600 }, attempts: 5, backoff: { type: 'exponential', delay: 1000 } },
    run: async () => (await import('../../workers/email-worker.js')).sendEmail,
  }),
  'user-job': job({
    queue: 'user-jobs', name: 'user-job', schema: 'jobs.user-job',
    options: { attempts: USER_JOB_ATTEMPTS, backoff: { type: 'exponential', delay: 2000 }, removeOnComplete: true, removeOnFail: { age: 7 * 24 * 3600 } },
    run: async () => (await import('../../workers/jobs-worker.js')).runUserJob,
  }),
  'lookup-rotation': job({
    queue: 'lookup-hmac-rotation', name: 'rotation', schema: 'jobs.lookup-rotation',
    // Many attempts: a grace job retries while a process is behind; a work job after a worker error.
    options: { attempts: 50, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: true, removeOnFail: { age: 7 * 24 * 3600 } },
    run: async () => (await import('../../workers/jobs-worker.js')).runRotation,
  }),
  'plugin-health': job({
    queue: 'plugin-health', name: 'check', schema: 'jobs.tick', options: periodic,
    schedule: { id: 'plugin-health', every: (c) => c.pluginHealthIntervalMs },
    run: async () => (await import('../../workers/jobs-worker.js')).checkPlugins,
  }),
  'log-archive': job({
    queue: 'log-archive', name: 'archive', schema: 'jobs.tick', options: periodic,
    schedule: { id: 'log-archive', every: (c) => c.logArchiveIntervalMs },
    run: async () => (await import('../../workers/log-worker.js')).archive,
  }),
  'log-governance': job({
    queue: 'log-archive', name: 'governance', schema: 'jobs.tick', options: periodic,
    schedule: { id: 'log-governance', every: (c) => c.logArchiveIntervalMs },
    run: async () => (await import('../../workers/log-worker.js')).governance,
  }),
  'log-destination-health': job({
    queue: 'log-archive', name: 'health', schema: 'jobs.tick', options: periodic,
    schedule: { id: 'log-destination-health', every: (c) => c.logDestinationHealthMs },
    run: async () => (await import('../../workers/log-worker.js')).destinationHealth,
  }),
  'log-rewrap': job({
    queue: 'log-rewrap', name: 'rewrap', schema: 'jobs.log-rewrap',
    options: { attempts: REWRAP_ATTEMPTS, backoff: { type: 'exponential', delay: 500 }, removeOnComplete: true, removeOnFail: 1000 },
    run: async () => (await import('../../workers/log-worker.js')).rewrap,
  }),
  'log-delivery': job({
    queue: 'log-delivery', name: 'deliver', schema: 'jobs.tick', options: periodic,
    schedule: { id: 'log-delivery', every: (c) => c.logDeliveryIntervalMs },
    run: async () => (await import('../../workers/log-worker.js')).deliverToSinks,
  }),
  'elevation-sweep': job({
    queue: 'elevation-sweep', name: 'sweep', schema: 'jobs.tick', options: { removeOnComplete: true, removeOnFail: { age: 3600 } },
    schedule: { id: 'elevation-expiry', every: (c) => c.elevationSweepMs },
    run: async () => (await import('../../workers/jobs-worker.js')).sweepApprovals,
  }),
  'principal-sweep': job({
    queue: 'principal-sweep', name: 'sweep', schema: 'jobs.tick', options: periodic,
    schedule: { id: 'principal-credentials', every: CREDENTIAL_SWEEP_MS },
    run: async () => (await import('../../workers/jobs-worker.js')).sweepCredentials,
  }),
  'tenant-purge': job({
    queue: 'tenant-purge', name: 'purge', schema: 'jobs.tenant-purge',
    options: { attempts: 5, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: true, removeOnFail: { age: 86400 } },
    run: async () => (await import('../../workers/jobs-worker.js')).purgeTenants,
  }),
  'tenant-purge-resume': job({
    queue: 'tenant-purge', name: 'resume', schema: 'jobs.tick', options: { removeOnComplete: true, removeOnFail: { age: 3600 } },
    schedule: { id: 'tenant-purge-resume', every: 60_000 },
    run: async () => (await import('../../workers/jobs-worker.js')).purgeTenants,
  }),
};
export type JobName = keyof typeof JOBS;
/** The data of a job, typed by its schema. */
export type JobData<K extends JobName> = import('../generated/types.js').SchemaTypes[(typeof JOBS)[K]['schema']];

/** The queues a role consumes. */
export const queuesOf = (role: WorkerRole): QueueName[] => (Object.keys(QUEUES) as QueueName[]).filter((q) => QUEUES[q].role === role);
/** The jobs that go to a queue. */
export const jobsOn = (queue: QueueName): JobName[] => (Object.keys(JOBS) as JobName[]).filter((k) => JOBS[k].queue === queue);
