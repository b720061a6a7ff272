import { Redis, type RedisOptions } from 'ioredis';
import type { Config } from '../config.js';

/**
 * What a connection is for; each role has the one set of options it needs:
 * - `cache`: the process's command client (sessions, codes, revocation, caches). Fails fast: no
 *   offline queue and a bounded retry per command, so a caller that cannot read revocation state gets
 *   an error at once and can fail closed. Keys carry config.redisPrefix through keyPrefix.
 * - `subscriber`: a connection in subscriber mode (change notices); it may issue no other commands, so it
 *   retries forever and connects when subscribe() asks. Channels carry the prefix explicitly (ioredis
 *   does not prefix channels).
 * - `producer`: adds BullMQ jobs from a request; fails fast so a request never waits on a queue outage.
 * - `worker`: a BullMQ consumer; BullMQ requires maxRetriesPerRequest null there (it blocks on commands).
 * - `admin`: a short-lived connection of a CLI command (publish a notice, then disconnect).
 * The queue roles use QUEUE_REDIS_URL and no keyPrefix (BullMQ takes its own `prefix` option).
 */
export type RedisRole = 'cache' | 'subscriber' | 'producer' | 'worker' | 'admin';

type RedisConfig = Pick<Config, 'redisUrl' | 'queueRedisUrl' | 'redisPrefix'>;

// Reconnect forever with a capped backoff; requests in the meantime fail fast (or wait, for workers).
const backoff = (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2000);

function optionsFor(config: RedisConfig, role: RedisRole): { url: string; options: RedisOptions } {
  switch (role) {
    case 'cache':
      return {
        url: config.redisUrl,
        options: {
          keyPrefix: config.redisPrefix, enableOfflineQueue: false, maxRetriesPerRequest: 1,
          connectTimeout: 2000, commandTimeout: 2000, enableAutoPipelining: true, retryStrategy: backoff,
        },
      };
    case 'subscriber':
      return { url: config.redisUrl, options: { lazyConnect: true, maxRetriesPerRequest: null, retryStrategy: backoff } };
    case 'producer':
      return { url: config.queueRedisUrl, options: { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, retryStrategy: backoff } };
    case 'worker':
      return { url: config.queueRedisUrl, options: { maxRetriesPerRequest: null, retryStrategy: (n) => Math.min(100 * 2 ** Math.min(n, 5), 3000) } };
    case 'admin':
      return { url: config.redisUrl, options: { lazyConnect: true, maxRetriesPerRequest: 1 } };
  }
}

/**
 * The one place a Redis connection is made. Connection errors are reported through the commands that
 * fail (and ioredis reconnects), so the 'error' event is consumed here; callers may add a listener to log it.
 */
export function createRedis(config: RedisConfig, role: RedisRole = 'cache', opts: { lazy?: boolean } = {}): Redis {
  const { url, options } = optionsFor(config, role);
  const redis = new Redis(url, opts.lazy === undefined ? options : { ...options, lazyConnect: opts.lazy });
  redis.on('error', () => {});
  return redis;
}

/** Closes a connection: QUIT when it can be sent, a hard disconnect otherwise. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status !== 'ready') { redis.disconnect(); return; }
  await redis.quit().then(() => {}, () => redis.disconnect());
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
