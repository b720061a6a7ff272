import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { loadConfig, type Config } from '../../src/config.js';

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
  return loadConfig({
    ...process.env,
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    REDIS_PREFIX: `t:${randomBytes(4).toString('hex')}:`,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    CRYPTO_THREADS: '1',
    ...overrides,
  });
}
