import { TenantSettingsCache } from './tenants/settings-cache.js';
import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import type { Lifecycle } from './lifecycle.js';
import type { Logger } from './log.js';
import { ClientCache } from './clients/cache.js';
import { PluginSwitches } from './plugins/switches.js';
import { ResourceServerCache } from './resources/cache.js';
import { createRedis } from './store/redis.js';
import { channel, redisChannels } from './store/redis-keys.js';
import type { Sql } from './sql.js';
import { AccessTokens } from './tokens/access-tokens.js';
import { ensureKeys, KeyRing } from './tokens/keys.js';
import { RevocationStore } from './tokens/revocation.js';
import { deriveKey } from './tokens/secrets.js';
import { ShardingCache } from './tokens/sharding.js';
import { Signer } from './tokens/signer.js';
import { StatusLists } from './tokens/status-list.js';

/**
 * Everything token endpoints use, created once per HTTP process. It lives here, with the process's
 * wiring, rather than in src/tokens/, because it also holds the client cache (src/clients/), whose
 * authentication in turn uses src/tokens/.
 */
export interface TokenServices {
  keys: KeyRing;
  signer: Signer;
  statusLists: StatusLists;
  sharding: ShardingCache;
  revocations: RevocationStore;
  clients: ClientCache;
  /** Per-tenant settings, cached per process with pub/sub invalidation. */
  tenantSettings: TenantSettingsCache;
  /** The plugins each tenant switched off, cached the same way. */
  plugins: PluginSwitches;
  /** Each tenant's resource servers (RFC 8707 resources), cached the same way. */
  resourceServers: ResourceServerCache;
  accessTokens: AccessTokens;
  /** Key for client secret and API key hashes (derived from KEY_ENCRYPTION_KEY). */
  secretKey: Buffer;
  /** After a key change committed (a tenant's `signing_algs`): reloads this process's ring and tells every other process to. */
  keysChanged(): Promise<void>;
  /** Stops what createTokenServices started (also registered on the lifecycle when one is given). */
  close(): Promise<void>;
}

/**
 * Loads keys and shard generations, starts their refresh timers, the crypto threads and the change
 * notice subscriber. Each of those is registered on `lifecycle` (when given), which closes them at shutdown.
 */
export async function createTokenServices(config: Config, sql: Sql, redis: Redis, log: Logger, lifecycle?: Lifecycle): Promise<TokenServices> {
  const closers: Array<() => void | Promise<void>> = [];
  const own = (name: string, close: () => void | Promise<void>) => { closers.push(close); lifecycle?.add(name, { close }); };
  await ensureKeys(sql, config.keyEncryptionKey, config.tokenSigningAlg);
  const keys = new KeyRing(sql, config.keyEncryptionKey, config.tokenSigningAlg);
  await keys.load();
  // A reload that finds the current key unusable leaves the process not ready and refusing issuance (KeyRing.load).
  const reloadKeys = () => { keys.load().catch((err: Error) => log.error({ err: err.message }, 'key reload failed')); };
  const sharding = new ShardingCache(sql);
  await sharding.load();
  sharding.start((err) => log.warn({ err }, 'shard generation refresh failed'));
  own('shard generation refresh', () => sharding.stop());
  const signer = new Signer(keys, {
    threads: config.cryptoThreads, maxQueue: config.cryptoQueueMax, floor: config.cryptoQueueFloor, maxWaitMs: config.cryptoQueueWaitMs,
    verifyInPool: config.cryptoVerify === 'pool', nice: config.cryptoNice,
  });
  own('crypto threads', () => signer.close());
  const revocations = new RevocationStore(redis, sql, log, { acks: config.revocationReplicaAcks, waitMs: config.revocationReplicaWaitMs, retryMs: config.revocationRetryMs });
  await revocations.ensureLoaded().catch((err) => log.warn({ err: err.message }, 'revocation state not loaded at start; checks fail closed until it is'));
  const clients = new ClientCache(sql, redis, config.redisPrefix, log);
  const tenantSettings = new TenantSettingsCache(sql, redis, channel(config, redisChannels.tenantsChanged), log);
  const plugins = new PluginSwitches(sql, redis, channel(config, redisChannels.pluginsChanged), log);
  const resourceServers = new ResourceServerCache(sql, redis, channel(config, redisChannels.resourceServersChanged), log);
  // One subscriber connection for change notices (clients, keys); it may not issue other commands.
  const sub = createRedis(config, 'subscriber');
  own('change notice subscriber', () => { sub.disconnect(); });
  const keysChannel = channel(config, redisChannels.keysChanged);
  // Pub/sub delivers at most once: notices published while this connection was down are gone. On each
  // reconnect (ioredis subscribes again by itself) drop the caches and reload the keys, so a missed
  // notice costs one reload instead of staleness until the TTL.
  let connected = false;
  sub.on('ready', () => {
    if (connected) {
      clients.clear();
      tenantSettings.clear();
      plugins.clear();
      resourceServers.clear();
      reloadKeys();
      log.info('change notices resumed; per-process caches cleared');
    }
    connected = true;
  });
  try {
    await sub.connect();
    await clients.subscribe(sub);
    await tenantSettings.subscribe(sub);
    await plugins.subscribe(sub);
    await resourceServers.subscribe(sub);
    await sub.subscribe(keysChannel);
    sub.on('message', (ch: string) => { if (ch === keysChannel) reloadKeys(); });
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'change notices unavailable; relying on cache expiry');
  }
  // Keys also reload on a timer, so a missed notice cannot leave a process on a retired key for long.
  const keyTimer = setInterval(() => reloadKeys(), 60_000);
  keyTimer.unref();
  own('key ring reload', () => clearInterval(keyTimer));
  let closing: Promise<void> | undefined;
  const accessTokens = new AccessTokens(config, keys, signer, sharding);
  const statusLists = new StatusLists(sql, config.issuer, tenantSettings, signer);
  accessTokens.statusLists = statusLists;
  return {
    keys, signer, sharding, revocations, clients, tenantSettings, plugins, resourceServers, statusLists, accessTokens,
    secretKey: deriveKey(config.keyEncryptionKey, 'client-secrets'),
    keysChanged: async () => {
      await redis.publish(keysChannel, 'changed').catch((err: Error) => log.warn({ err: err.message }, 'keys notice not sent; other processes reload on their timer'));
      await keys.load().catch((err: Error) => log.error({ err: err.message }, 'key reload failed'));
    },
    close: () => (closing ??= (async () => { for (const c of closers.reverse()) await c(); })()),
  };
}
