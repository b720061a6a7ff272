import { Queue, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { ServiceUnavailable } from '../errors.js';
import { mailKey, seal } from './seal.js';

export const EMAIL_QUEUE = 'email';

/** One email job. `sealed` is the one-time code, encrypted for the worker (see seal.ts). */
export interface LoginCodeJob {
  template: 'login_code';
  to: string;
  sealed: string;
  clientName: string;
  expiresInSeconds: number;
}

export type EmailJob = LoginCodeJob;

/** BullMQ prefix from config.redisPrefix ("svc:" -> "svc"), so tests and deployments sharing a Redis stay apart. */
export function emailQueuePrefix(config: Pick<Config, 'redisPrefix'>): string {
  return config.redisPrefix.replace(/:+$/, '') || 'svc';
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

  constructor(config: Pick<Config, 'queueRedisUrl' | 'redisPrefix' | 'keyEncryptionKey'>) {
    this.connection = new Redis(config.queueRedisUrl, {
      enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000,
      retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
    });
    this.connection.on('error', () => {});
    this.queue = new Queue<EmailJob>(EMAIL_QUEUE, { connection: this.connection, prefix: emailQueuePrefix(config), defaultJobOptions: JOB_OPTIONS });
    this.queue.on('error', () => {});
    this.key = mailKey(config.keyEncryptionKey);
  }

  async sendLoginCode(to: string, code: string, clientName: string, expiresInSeconds: number): Promise<void> {
    try {
      await this.queue.add('login_code', { template: 'login_code', to, sealed: seal(this.key, code, to), clientName, expiresInSeconds });
    } catch (err) {
      throw new ServiceUnavailable('The code could not be sent; retry shortly.', 1, err);
    }
  }

  async close(): Promise<void> {
    await this.queue.close().catch(() => {});
    await this.connection.quit().catch(() => this.connection.disconnect());
  }
}
