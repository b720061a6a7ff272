import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import { NotifiedCache } from '../notified-cache.js';
import { ResourceServerRepository, type ResourceServer } from '../store/resource-servers.js';
import type { Sql } from '../sql.js';

/** A tenant's resource servers, by identifier (the `resource` clients name) and by id. */
export interface TenantResources {
  byIdentifier: ReadonlyMap<string, ResourceServer>;
  byId: ReadonlyMap<string, ResourceServer>;
}

/** A tenant's resource servers as one cache entry. */
export function tenantResources(rows: ResourceServer[]): TenantResources {
  return { byIdentifier: new Map(rows.map((r) => [r.identifier, r])), byId: new Map(rows.map((r) => [r.id, r])) };
}

/**
 * Each tenant's resource servers, cached per process so /token and the metadata documents cost no
 * Postgres query for them: a hit is a Map lookup. Admin changes announce the tenant on a Redis channel,
 * which evicts it in every process at once; the TTL (30 s) bounds staleness if a notice is missed.
 */
export class ResourceServerCache extends NotifiedCache<TenantResources> {
  constructor(sql: Sql, pub: Redis, channel: string, log: Logger) {
    super({ name: 'resource servers', ttlMs: 30_000, channel, pub, log, load: async (tenantId) => tenantResources(await new ResourceServerRepository(sql, tenantId).all()) });
  }
}
