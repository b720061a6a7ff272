import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { createRedis } from '../store/redis.js';
import { queuePrefix as prefixOfQueues } from '../store/redis-keys.js';

export const WEBHOOK_QUEUE = 'webhooks';

export interface DeliveryJob {
  tenantId: string;
  deliveryId: string;
  /** The attempt this job performs; a job whose attempt is no longer the delivery's current one is a no-op. */
  attempt: number;
}

/** BullMQ prefix from config.redisPrefix ("svc:" -> "{svc}", see src/store/redis-keys.ts), so tests and deployments sharing a Redis stay apart. */
export function queuePrefix(config: Pick<Config, 'redisPrefix'>): string {
  return prefixOfQueues(config);
}

/**
 * One job per (delivery, attempt). Adding a job whose id exists is a no-op in BullMQ, which makes the
 * relay's enqueue-then-mark safe to repeat after a crash. (BullMQ ids may not contain ':'.)
 */
export function deliveryJobId(deliveryId: string, attempt: number): string {
  return `${deliveryId}.${attempt}`;
}

// Finished jobs are kept briefly only: the outcome lives in Postgres, and a stale re-add of a removed
// job is harmless because the consumer checks the delivery's state first.
export const JOB_OPTIONS: JobsOptions = {
  removeOnComplete: { age: 3600, count: 10_000 },
  removeOnFail: { age: 24 * 3600 },
  // Attempts here cover infrastructure failures (Postgres down while recording); receiver failures
  // are retried by the delivery's own schedule (src/webhooks/retry.ts) as new jobs.
  attempts: 20,
  backoff: { type: 'exponential', delay: 1000 },
};

/** A producer: fails fast when the queue's Redis is unreachable (no offline queue). */
export function createDeliveryQueue(config: Pick<Config, 'redisUrl' | 'queueRedisUrl' | 'redisPrefix'>): { queue: Queue<DeliveryJob>; connection: Redis } {
  const connection = createRedis(config, 'producer');
  return { queue: new Queue<DeliveryJob>(WEBHOOK_QUEUE, { connection, prefix: queuePrefix(config), defaultJobOptions: JOB_OPTIONS }), connection };
}

/** A consumer connection: retries forever (maxRetriesPerRequest null), as BullMQ workers require. */
export function createWorkerConnection(config: Pick<Config, 'redisUrl' | 'queueRedisUrl' | 'redisPrefix'>): Redis {
  return createRedis(config, 'worker');
}
