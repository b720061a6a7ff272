import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { ServiceUnavailable } from '../errors.js';
import { closeRedis, createRedis } from '../store/redis.js';
import { queuePrefix } from '../store/redis-keys.js';

export const USER_JOBS_QUEUE = 'user-jobs';
/** Job data: ids only; the file and the mapping stay in Postgres. */
export interface UserJobData { tenantId: string; jobId: string; kind: 'import' | 'export' }

export const USER_JOB_ATTEMPTS = 3;
const JOB_OPTIONS: JobsOptions = { attempts: USER_JOB_ATTEMPTS, backoff: { type: 'exponential', delay: 2000 }, removeOnComplete: true, removeOnFail: { age: 7 * 24 * 3600 } };

/** The producer side, created on first use by the HTTP process and closed with it (fails fast, no offline queue). */
export class UserJobQueue {
  private connection: Redis | undefined;
  private queue: Queue<UserJobData> | undefined;
  constructor(private readonly config: Config) {}

  async add(d: UserJobData): Promise<void> {
    if (!this.queue) {
      this.connection = createRedis(this.config, 'producer');
      this.queue = new Queue<UserJobData>(USER_JOBS_QUEUE, { connection: this.connection, prefix: queuePrefix(this.config), defaultJobOptions: JOB_OPTIONS });
      this.queue.on('error', () => {});
    }
    try { await this.queue.add(d.kind, d, { jobId: d.jobId }); } catch (err) { throw new ServiceUnavailable('The job could not be queued; retry shortly.', 1, err); }
  }

  async close(): Promise<void> {
    await this.queue?.close().catch(() => {});
    if (this.connection) await closeRedis(this.connection);
  }
}
