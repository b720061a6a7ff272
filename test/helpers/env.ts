import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { Cluster, Redis } from 'ioredis';
import t from 'tap';
import { loadConfig, type Config } from '../../src/config.js';
import { parseRedisTarget } from '../../src/store/redis-url.js';

/**
 * A test file whose tests have all ended must not hold the suite until tap's timeout because a connection
 * was left open (seen once on the Redis Cluster under full parallel load; not reproduced alone). Fifteen
 * seconds after the root test ends, the open sockets are printed (so the leak stays visible) and the file
 * exits with the result it already reported.
 */
t.teardown(() => {
  setTimeout(() => {
    const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles()
      .filter((h): h is net.Socket => h instanceof net.Socket && !(h as { _type?: string })._type && h.remotePort !== undefined)
      .map((s) => `${s.remoteAddress}:${s.remotePort}`);
    process.stderr.write(`${process.argv[1]}: open sockets 15 s after the last test: ${handles.join(', ') || 'none'}\n`);
    process.exit();
  }, 15_000).unref();
});

/** A short random name so each test file gets its own tenant, Redis prefix and queue names. */
export function uniqueName(label: string): string {
  return `${label}-${randomBytes(4).toString('hex')}`;
}

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Test configuration: the shared test Postgres/Redis from the environment, a private Redis prefix, port 0. */
export function testConfig(overrides: Record<string, string> = {}): Config {
  const prefix = `t:${randomBytes(4).toString('hex')}:`;
  // Leave the shared Redis as we found it: every key under this file's prefix goes when the file ends.
  t.teardown(() => removePrefix(overrides.REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', prefix));
  return loadConfig({
    ...process.env,
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    REDIS_PREFIX: prefix,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    CRYPTO_THREADS: '1',
    // Load shedding by predicted signing wait depends on how busy the machine is (CI runs files in
    // parallel); tests that exercise it set it themselves.
    CRYPTO_QUEUE_WAIT_MS: '0',
    ...overrides,
  });
}

/**
 * Deletes every key under a prefix (queues included: their prefix is the same in braces), with a client
 * of its own that has no keyPrefix; on a cluster, on every master, one UNLINK per key (no cross-slot command).
 */
export async function removePrefix(url: string, prefix: string): Promise<void> {
  const target = parseRedisTarget(url);
  const patterns = [`${prefix}*`, `{${prefix.replace(/:+$/, '')}}*`];
  const nodeOptions = { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 1000, retryStrategy: () => null };
  const cluster = target.kind === 'cluster'
    ? new Cluster(target.nodes, { lazyConnect: true, clusterRetryStrategy: () => null, redisOptions: { ...nodeOptions, username: target.username, password: target.password } })
    : undefined;
  const single = target.kind === 'single' ? new Redis(target.url, nodeOptions) : undefined;
  (cluster ?? single)!.on('error', () => {});
  try {
    // A cluster that a test already stopped may never settle connect(): give up after 5 s.
    await Promise.race([(cluster ?? single)!.connect(), new Promise((_, reject) => setTimeout(() => reject(new Error('unreachable')), 5000).unref())]);
    for (const node of cluster ? cluster.nodes('master') : [single!]) {
      for (const pattern of patterns) {
        let cursor = '0';
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
          if (keys.length) await Promise.all(keys.map((k) => node.unlink(k)));
          cursor = next;
        } while (cursor !== '0');
      }
    }
  } catch {
    // A private Redis that the test already stopped has nothing left to clean.
  } finally {
    (cluster ?? single)!.disconnect();
  }
}
