import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { ServiceUnavailable } from '../errors.js';
import { closeRedis, createRedis } from '../store/redis.js';
import { queuePrefix } from '../store/redis-keys.js';
import { mailKey, seal } from './seal.js';

export const EMAIL_QUEUE = 'email';

/** One email job. `sealed` is the one-time code, encrypted for the worker (see seal.ts); `tenantId` names whose it is (a tenant's purge removes its jobs). */
export interface LoginCodeJob {
  template: 'login_code';
  tenantId: string;
  to: string;
  sealed: string;
  clientName: string;
  expiresInSeconds: number;
}

/** A step-up code for completing an approval artifact (src/elevation/artifacts.ts). */
export interface ApprovalCodeJob {
  template: 'approval_code';
  tenantId: string;
  to: string;
  sealed: string;
  requestId: string;
  expiresInSeconds: number;
}

export type EmailJob = LoginCodeJob | ApprovalCodeJob;

/** BullMQ prefix from config.redisPrefix ("svc:" -> "{svc}", see src/store/redis-keys.ts), so tests and deployments sharing a Redis stay apart. */
export function emailQueuePrefix(config: Pick<Config, 'redisPrefix'>): string {
  return queuePrefix(config);
}

// A login code is useless after its TTL, so the job is retried briefly and forgotten at once.
const JOB_OPTIONS: JobsOptions = {
  removeOnComplete: true,
  removeOnFail: { age: 3600 },
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
};

/** The producer side: fails fast (no offline queue) so a request never waits on a queue outage. */
export class MailQueue {
  private readonly connection: Redis;
  private readonly queue: Queue<EmailJob>;
  private readonly key: Buffer;

  constructor(config: Pick<Config, 'redisUrl' | 'queueRedisUrl' | 'redisPrefix' | 'keyEncryptionKey'>) {
    this.connection = createRedis(config, 'producer');
    this.queue = new Queue<EmailJob>(EMAIL_QUEUE, { connection: this.connection, prefix: emailQueuePrefix(config), defaultJobOptions: JOB_OPTIONS });
    this.queue.on('error', () => {});
    this.key = mailKey(config.keyEncryptionKey);
  }

  async sendLoginCode(tenantId: string, to: string, code: string, clientName: string, expiresInSeconds: number): Promise<void> {
    try {
      await this.queue.add('login_code', { template: 'login_code', tenantId, to, sealed: seal(this.key, code, to), clientName, expiresInSeconds });
    } catch (err) {
      throw new ServiceUnavailable('The code could not be sent; retry shortly.', 1, err);
    }
  }

  async sendApprovalCode(tenantId: string, to: string, code: string, requestId: string, expiresInSeconds: number): Promise<void> {
    try {
      await this.queue.add('approval_code', { template: 'approval_code', tenantId, to, sealed: seal(this.key, code, to), requestId, expiresInSeconds });
    } catch (err) {
      throw new ServiceUnavailable('The code could not be sent; retry shortly.', 1, err);
    }
  }

  private closing: Promise<void> | undefined;

  /** Closes the queue and its connection (idempotent: the lifecycle and a test may both call it). */
  close(): Promise<void> {
    return (this.closing ??= (async () => {
      await this.queue.close().catch(() => {});
      await closeRedis(this.connection);
    })());
  }
}
