import { Queue, type Job, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { validators } from '../generated/index.js';
import { closeRedis, createRedis, whenReady } from '../store/redis.js';
import { queuePrefix } from '../store/redis-keys.js';
import { jobTelemetry } from '../tracing/jobs.js';
import { context, tracingOn, type Context } from '../tracing/tracer.js';
import { JOBS, type JobData, type JobName, type QueueName } from './table.js';

/** Per-job options a producer may add to the declared ones; `name` overrides the declared job name (shown in BullMQ tools). */
export type AddOptions = Omit<JobsOptions, 'repeat'> & {
  name?: string;
  /** A sampled request's context (deps.trace): the job carries its trace to the consumer (src/tracing/sync-context.ts). */
  trace?: Context;
};

/** Refuses data its job's schema does not accept: a programmer mistake, never a client error. */
export function checkJobData(key: JobName, data: unknown): void {
  const validate = validators[JOBS[key].schema]!;
  if (!validate(data)) {
    const e = validate.errors?.[0];
    throw new TypeError(`job ${key}: data refused by ${JOBS[key].schema}${e ? ` (${e.instancePath || '/'} ${e.message ?? e.keyword})` : ''}`);
  }
}

/**
 * The typed producers of one process, over one shared producer connection (fails fast, no offline
 * queue: a request never waits on a queue outage). Queues are opened on first use; close() closes them
 * and the connection. Every add is checked against the job's schema first.
 */
export class JobQueues {
  private conn: Redis | undefined;
  private readonly queues = new Map<QueueName, Queue>();
  private closing: Promise<void> | undefined;

  constructor(private readonly config: Pick<Config, 'redisUrl' | 'queueRedisUrl' | 'redisPrefix'>) {}

  /** The process's producer connection (also what the webhook relay checks its sentinel on). */
  get connection(): Redis {
    if (this.closing) throw new Error('job queues closed');
    return (this.conn ??= createRedis(this.config, 'producer'));
  }

  /**
   * The BullMQ queue itself, for reads and removals (getJob, remove, getDelayed); adds go through add().
   * Made only once the connection is ready (see whenReady); until then this fails fast and a later call
   * tries again.
   */
  async queue(name: QueueName): Promise<Queue> {
    let q = this.queues.get(name);
    if (!q) {
      await whenReady(this.connection);
      if ((q = this.queues.get(name))) return q;
      q = new Queue(name, { connection: this.connection, prefix: queuePrefix(this.config), ...(tracingOn ? { telemetry: jobTelemetry() } : {}) });
      q.on('error', () => {});
      this.queues.set(name, q);
    }
    return q;
  }

  /** Adds one job with its declared options (and `opts` over them). */
  async add<K extends JobName>(key: K, data: JobData<K>, opts: AddOptions = {}): Promise<Job> {
    checkJobData(key, data);
    const { name, trace, ...rest } = opts;
    const d = JOBS[key];
    const q = await this.queue(d.queue);
    // BullMQ's producer telemetry reads the active context when add is called: the request's, for that call.
    if (trace !== undefined) return context.with(trace, () => q.add(name ?? d.name, data, { ...d.options, ...rest }));
    return q.add(name ?? d.name, data, { ...d.options, ...rest });
  }

  /** Adds several jobs of one kind in one round trip. */
  async addBulk<K extends JobName>(key: K, items: Array<{ data: JobData<K>; opts?: AddOptions }>): Promise<Job[]> {
    const d = JOBS[key];
    for (const i of items) checkJobData(key, i.data);
    return (await this.queue(d.queue)).addBulk(items.map(({ data, opts = {} }) => {
      const { name, trace: _trace, ...rest } = opts;
      return { name: name ?? d.name, data, opts: { ...d.options, ...rest } };
    }));
  }

  /** Closes every queue opened and the connection (idempotent). */
  close(): Promise<void> {
    return (this.closing ??= (async () => {
      await Promise.allSettled([...this.queues.values()].map((q) => q.close()));
      if (this.conn) await closeRedis(this.conn);
    })());
  }
}
