import type { Job, JobsOptions } from 'bullmq';
import type { Config } from '../config.js';
import type { SchemaTypes } from '../generated/types.js';

/** The process roles that consume queues (src/supervisor forks one process of each). */
export const WORKER_ROLES = ['webhook-worker', 'email-worker', 'jobs-worker', 'log-worker'] as const;
export type WorkerRole = (typeof WORKER_ROLES)[number];

/** A job data schema: every schema under schemas/jobs/. */
export type JobSchema = Extract<keyof SchemaTypes, `jobs.${string}`>;

/** A number of milliseconds, fixed or read from the config. */
export type Ms = number | ((c: Config) => number);
export const ms = (v: Ms, c: Config): number => (typeof v === 'function' ? v(c) : v);

/**
 * One BullMQ queue and its consumer: which process role consumes it and how (concurrency, and the lock
 * after which a dead consumer's active job is found stalled and run again).
 */
export interface QueueDecl {
  role: WorkerRole;
  concurrency: number | ((c: Config) => number);
  lockDuration?: Ms;
  stalledInterval?: Ms;
  maxStalledCount?: number;
  /** What of a failed attempt's error is logged: its message, or only its code (driver errors can quote row values). */
  logError?: 'message' | 'code';
}

/** What a job's run function is handed: its validated data, its role's context, the BullMQ job and its lock token. */
export type JobRunner<D, C> = (data: D, ctx: C, job: Job, token: string | undefined) => Promise<unknown>;

/**
 * One job: the queue it goes to, the job name producers give it, the schema of its data (checked when
 * it is added and again when it is consumed), its retry options, its schedule when it is periodic, and
 * its run function (loaded by the consuming role only, so producers do not load consumers' code).
 */
export interface JobDecl<Q extends string, S extends JobSchema, C> {
  queue: Q;
  name: string;
  schema: S;
  /** attempts, backoff and retention; a producer may add per-job options (jobId, delay). */
  options: JobsOptions;
  /** A periodic job: registered as a BullMQ job scheduler `id` repeating every `every` ms. */
  schedule?: { id: string; every: Ms };
  run: () => Promise<JobRunner<SchemaTypes[S], C>>;
}
