import keySlot from 'cluster-key-slot';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Config } from '../config.js';
import { parseRedisTarget } from './redis-url.js';
import { traceRedis } from '../tracing/redis.js';
import { timeRedis } from './redis-metrics.js';
import { tracingOn } from '../tracing/tracer.js';

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
 *
 * Either address may name a Redis Cluster (`redis+cluster://host:port,host:port`, src/store/redis-url.ts):
 * the same roles then get an ioredis `Cluster` with the same options (per-node options under
 * redisOptions, keyPrefix and the offline queue on the cluster itself). A Cluster has the command
 * interface of a Redis, so callers keep the `Redis` type; the few places that need to know (a
 * multi-key read across slots, a pipeline over many slots, a SCAN of every master) ask `isCluster()`.
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
 * Cluster options for a role: the role's per-node options, and on the cluster itself what it decides
 * (keyPrefix, offline queue, auto-pipelining, lazy connection). While a master is down and its replica
 * not yet promoted, commands for its slots fail (fail fast roles) or wait (workers); the client refreshes
 * the slot map on MOVED, CLUSTERDOWN and connection loss, so it follows a failover by itself.
 */
function clusterOptionsFor(options: RedisOptions, target: Extract<ReturnType<typeof parseRedisTarget>, { kind: 'cluster' }>): ClusterOptions {
  const { keyPrefix, enableOfflineQueue, enableAutoPipelining: _pipelining, lazyConnect, retryStrategy, ...node } = options;
  const failFast = enableOfflineQueue === false;
  return {
    keyPrefix, lazyConnect,
    // No auto-pipelining on a cluster: ioredis handles MOVED per pipeline, not per command, so after a
    // failover an auto-pipeline kept getting MOVED and never learnt the new master (the failover test saw
    // 503s for a minute; ioredis issue #2075). It also groups EVAL by its script text instead of its key.
    // Concurrent commands are still written at once, one round trip in parallel per node.
    enableAutoPipelining: false,
    enableOfflineQueue: !failFast,
    // Reconnect to the whole cluster (every startup node unreachable) with the role's backoff.
    clusterRetryStrategy: retryStrategy ?? backoff,
    // A fail-fast role gives up on a moved or unserved slot quickly (the caller answers 503); a worker waits.
    retryDelayOnFailover: failFast ? 50 : 200,
    retryDelayOnClusterDown: failFast ? 50 : 200,
    retryDelayOnTryAgain: failFast ? 50 : 200,
    maxRedirections: 16,
    slotsRefreshTimeout: 2000,
    redisOptions: {
      ...node,
      username: target.username, password: target.password,
      ...(target.tls ? { tls: {} } : {}),
    },
  };
}

/**
 * The one place a Redis connection is made (one server or a cluster, from the address). Connection
 * errors are reported through the commands that fail (and ioredis reconnects), so the 'error' event is
 * consumed here; callers may add a listener to log it.
 */
export function createRedis(config: RedisConfig, role: RedisRole = 'cache', opts: { lazy?: boolean } = {}): Redis {
  const { url, options: base } = optionsFor(config, role);
  const options = opts.lazy === undefined ? base : { ...base, lazyConnect: opts.lazy };
  const target = parseRedisTarget(url);
  if (target.kind === 'cluster') {
    const cluster = new Cluster(target.nodes, clusterOptionsFor(options, target));
    cluster.on('error', () => {});
    cluster.on('node error', () => {});
    // Same command interface; see the note on RedisRole.
    const timed = timeRedis(cluster as unknown as Redis, role);
    return tracingOn ? traceRedis(timed, role) : timed;
  }
  const redis = new Redis(url, options);
  redis.on('error', () => {});
  timeRedis(redis, role);
  return tracingOn ? traceRedis(redis, role) : redis;
}

/**
 * Resolves when the connection is ready for commands, or rejects after `timeoutMs`. BullMQ reads the
 * server version as soon as a Queue is made and treats a Cluster still in 'connect' as ready; on a
 * fail-fast connection (no offline queue) that read fails, and the Queue stays broken for good. So a
 * Queue is made on a fail-fast cluster connection only once this resolved.
 */
export function whenReady(redis: Redis, timeoutMs = 2000): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (err?: Error) => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      if (err) reject(err); else resolve();
    };
    const onReady = () => done();
    const timer = setTimeout(() => done(new Error(`redis not ready after ${timeoutMs} ms (${redis.status})`)), timeoutMs);
    redis.on('ready', onReady);
  });
}

/** Whether a connection made by createRedis talks to a Redis Cluster. */
export function isCluster(redis: Redis): boolean {
  return (redis as unknown as { isCluster?: boolean }).isCluster === true;
}

/** The masters of a cluster (for a SCAN of every key), or the one server. */
export function masters(redis: Redis): Redis[] {
  return isCluster(redis) ? (redis as unknown as Cluster).nodes('master') : [redis];
}

/** The hash tag part of a key (what decides its cluster slot): the text in the first `{...}`, or the whole key. */
export function hashTag(key: string): string {
  const a = key.indexOf('{');
  if (a < 0) return key;
  const b = key.indexOf('}', a + 1);
  return b > a + 1 ? key.slice(a + 1, b) : key;
}

/**
 * MGET that works on a cluster: one MGET per hash slot, all sent at once (so one round trip, to each node
 * concerned in parallel), answers in the order of `keys`. On one server, one MGET.
 *
 * Keys from index `required` on are optional on a cluster: a part holding only optional keys that fails
 * (its master is down) answers undefined for them instead of failing the read, so a cache entry on a
 * dead master does not refuse a token whose revocation keys are all readable.
 */
export async function mgetAcrossSlots(redis: Redis, keys: string[], required = keys.length): Promise<(string | null | undefined)[]> {
  if (!isCluster(redis)) return redis.mget(keys);
  const prefix = (redis as unknown as { options: { keyPrefix?: string } }).options.keyPrefix ?? '';
  const groups = new Map<number, number[]>();
  keys.forEach((k, i) => { const slot = keySlot(prefix + k); const g = groups.get(slot); if (g) g.push(i); else groups.set(slot, [i]); });
  const out = new Array<string | null | undefined>(keys.length).fill(null);
  await Promise.all([...groups.values()].map(async (idx) => {
    let v: (string | null)[];
    try { v = await redis.mget(idx.map((i) => keys[i]!)); } catch (err) {
      if (idx.some((i) => i < required)) throw err;
      for (const i of idx) out[i] = undefined;
      return;
    }
    idx.forEach((i, j) => { out[i] = v[j] ?? null; });
  }));
  return out;
}

/**
 * SETs many keys (value, and a TTL in ms when given): one pipeline on one server; on a cluster, one
 * command each, a thousand in flight at a time, as a cluster pipeline must stay within one slot.
 */
export async function setMany(redis: Redis, entries: Array<{ key: string; value: string; ttlMs?: number }>): Promise<void> {
  if (isCluster(redis)) {
    for (let i = 0; i < entries.length; i += 1000) {
      await Promise.all(entries.slice(i, i + 1000).map((e) => (e.ttlMs === undefined ? redis.set(e.key, e.value) : redis.set(e.key, e.value, 'PX', e.ttlMs))));
    }
    return;
  }
  const p = redis.pipeline();
  for (const e of entries) { if (e.ttlMs === undefined) p.set(e.key, e.value); else p.set(e.key, e.value, 'PX', e.ttlMs); }
  const res = await p.exec();
  const failed = res?.find(([err]) => err);
  if (failed) throw failed[0];
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
