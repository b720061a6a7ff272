import { Redis } from 'ioredis';
import type { Config } from '../config.js';

/**
 * The Redis client of a process. It fails fast: no offline queue and a bounded retry per command,
 * so a caller that cannot read revocation state gets an error at once and can fail closed.
 */
export function createRedis(config: Pick<Config, 'redisUrl' | 'redisPrefix'>, opts: { lazy?: boolean } = {}): Redis {
  return new Redis(config.redisUrl, {
    keyPrefix: config.redisPrefix,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: 2000,
    enableAutoPipelining: true,
    lazyConnect: opts.lazy ?? false,
    // Reconnect forever with a capped backoff; requests in the meantime fail fast.
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
  });
}

/** Resolves once the client is ready (or rejects after timeoutMs). */
export function redisReady(redis: Redis, timeoutMs = 5000): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => { cleanup(); reject(new Error('redis not ready')); }, timeoutMs);
    const onReady = () => { cleanup(); resolve(); };
    const cleanup = () => { clearTimeout(t); redis.off('ready', onReady); };
    redis.on('ready', onReady);
    if (redis.status === 'wait') redis.connect().catch(() => {});
  });
}
