import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import { NotifiedCache } from '../notified-cache.js';
import { PluginConfigRepository } from '../store/plugin-configs.js';
import type { Sql } from '../sql.js';

/**
 * The plugins each tenant has switched off, cached per process (a plugin without a row is on), so a
 * code request does not query them. Enable and disable announce the tenant on a Redis channel, which
 * evicts it in every process at once; the TTL (30 s) bounds staleness if a notice is missed.
 */
export class PluginSwitches extends NotifiedCache<ReadonlySet<string>> {
  constructor(sql: Sql, pub: Redis, channel: string, log: Logger) {
    super({ name: 'plugin switches', ttlMs: 30_000, channel, pub, log, load: async (tenantId) => new Set(await new PluginConfigRepository(sql, tenantId).disabled()) });
  }

  /** Whether the plugin is on for the tenant. */
  async enabled(tenantId: string, pluginId: string): Promise<boolean> {
    return !(await this.get(tenantId)).has(pluginId);
  }
}
