import { Redis } from 'ioredis';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { ClientCache } from '../clients/cache.js';
import type { Sql } from '../store/sql.js';
import { AccessTokens } from './access-tokens.js';
import { ensureKeys, KeyRing } from './keys.js';
import { RevocationStore } from './revocation.js';
import { deriveKey } from './secrets.js';
import { ShardingCache } from './sharding.js';
import { Signer } from './signer.js';

export const KEYS_CHANNEL = 'keys:changed';

/** Everything token endpoints use, created once per HTTP process. */
export interface TokenServices {
  keys: KeyRing;
  signer: Signer;
  sharding: ShardingCache;
  revocations: RevocationStore;
  clients: ClientCache;
  accessTokens: AccessTokens;
  /** Key for client secret and API key hashes (derived from KEY_ENCRYPTION_KEY). */
  secretKey: Buffer;
  close(): Promise<void>;
}

export async function createTokenServices(config: Config, sql: Sql, redis: Redis, log: Logger): Promise<TokenServices> {
  await ensureKeys(sql, config.keyEncryptionKey, config.tokenSigningAlg);
  const keys = new KeyRing(sql, config.keyEncryptionKey, config.tokenSigningAlg);
  await keys.load();
  const sharding = new ShardingCache(sql);
  await sharding.load();
  sharding.start((err) => log.warn({ err }, 'shard generation refresh failed'));
  const signer = new Signer(keys, {
    threads: config.cryptoThreads, maxQueue: config.cryptoQueueMax, maxWaitMs: config.cryptoQueueWaitMs,
    verifyInPool: config.cryptoVerify === 'pool',
  });
  const revocations = new RevocationStore(redis, sql, log);
  await revocations.ensureLoaded().catch((err) => log.warn({ err: err.message }, 'revocation state not loaded at start; checks fail closed until it is'));
  const clients = new ClientCache(sql, redis, config.redisPrefix, log);
  // One subscriber connection for change notices (clients, keys); it may not issue other commands.
  const sub = new Redis(config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: null, retryStrategy: (n) => Math.min(50 * 2 ** Math.min(n, 6), 2000) });
  sub.on('error', () => {});
  try {
    await sub.connect();
    await clients.subscribe(sub);
    await sub.subscribe(config.redisPrefix + KEYS_CHANNEL);
    sub.on('message', (ch: string) => { if (ch === config.redisPrefix + KEYS_CHANNEL) keys.load().catch((err) => log.error({ err }, 'key reload failed')); });
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'change notices unavailable; relying on cache expiry');
  }
  // Keys also reload on a timer, so a missed notice cannot leave a process on a retired key for long.
  const keyTimer = setInterval(() => keys.load().catch((err) => log.error({ err }, 'key reload failed')), 60_000);
  keyTimer.unref();
  return {
    keys, signer, sharding, revocations, clients,
    accessTokens: new AccessTokens(config, keys, signer, sharding),
    secretKey: deriveKey(config.keyEncryptionKey, 'client-secrets'),
    close: async () => {
      clearInterval(keyTimer);
      sharding.stop();
      sub.disconnect();
      await signer.close();
    },
  };
}
