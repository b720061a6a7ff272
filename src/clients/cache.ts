import { redisChannels } from '../store/redis-keys.js';
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import { NotifiedCache } from '../notified-cache.js';
import type { Sql } from '../sql.js';
import type { Client } from './model.js';
import { findClientForAuthentication } from '../cross-tenant/credentials.js';

/**
 * Client records cached in each process so client authentication costs no Postgres query on the hot
 * path. Changes are announced on a Redis channel and evict the entry everywhere; the TTL (30 s, an
 * unknown client 2 s) bounds staleness if a notice is missed.
 */
export class ClientCache extends NotifiedCache<Client | null> {
  constructor(sql: Sql, pub: Redis, prefix: string, log: Logger) {
    super({
      name: 'client', load: (clientId) => findClientForAuthentication(sql, clientId), ttlMs: 30_000, missTtlMs: 2_000, isMiss: (c) => c === null,
      // Publish goes around keyPrefix, so the channel carries the prefix explicitly.
      channel: prefix + redisChannels.clientsChanged, pub, log,
    });
  }
}
