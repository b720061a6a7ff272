import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { ServiceUnavailable } from '../errors.js';
import { closeRedis, createRedis } from '../store/redis.js';
import { queuePrefix } from '../store/redis-keys.js';

export const LOOKUP_ROTATION_QUEUE = 'lookup-hmac-rotation';

/** `work`: run what the state holds (reindex, verify, rollback, drop); `grace`: complete once grace has expired. */
export interface RotationJobData { operationId: string; kind: 'work' | 'grace' }

// Many attempts: a grace job retries while a process is behind; a work job after a worker error.
const JOB_OPTIONS: JobsOptions = { attempts: 50, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: true, removeOnFail: { age: 7 * 24 * 3600 } };

/** The producer side, created on first use by the HTTP process and closed with it. */
export class RotationQueue {
  private connection: Redis | undefined;
  private queue: Queue<RotationJobData> | undefined;
  constructor(private readonly config: Config) {}

  async add(d: RotationJobData, delayMs = 0): Promise<void> {
    if (!this.queue) {
      this.connection = createRedis(this.config, 'producer');
      this.queue = new Queue<RotationJobData>(LOOKUP_ROTATION_QUEUE, { connection: this.connection, prefix: queuePrefix(this.config), defaultJobOptions: JOB_OPTIONS });
      this.queue.on('error', () => {});
    }
    try { await this.queue.add(d.kind, d, { delay: Math.max(0, delayMs) }); } catch (err) { throw new ServiceUnavailable('The rotation job could not be queued; retry shortly.', 1, err); }
  }

  async close(): Promise<void> {
    await this.queue?.close().catch(() => {});
    if (this.connection) await closeRedis(this.connection);
  }
}
