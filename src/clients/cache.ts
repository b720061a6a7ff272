import { redisChannels } from '../store/redis-keys.js';
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import type { Sql } from '../store/sql.js';
import type { Client } from './model.js';
import { findClientForAuthentication } from '../store/clients.js';

const TTL_MS = 30_000;
const MISS_TTL_MS = 2_000;
const CLIENT_CHANNEL = redisChannels.clientsChanged;

/**
 * Client records cached in each process so client authentication costs no Postgres query on the hot
 * path. Changes are announced on a Redis channel and evict the entry everywhere; the TTL bounds
 * staleness if a notice is missed.
 */
export class ClientCache {
  private readonly entries = new Map<string, { client: Client | null; until: number }>();
  private readonly loading = new Map<string, Promise<Client | null>>();

  constructor(private readonly sql: Sql, private readonly pub: Redis, private readonly prefix: string, private readonly log: Logger) {}

  /** Subscribes to change notices on a dedicated connection. */
  async subscribe(sub: Redis): Promise<void> {
    sub.on('message', (_ch: string, clientId: string) => this.entries.delete(clientId));
    await sub.subscribe(this.prefix + CLIENT_CHANNEL);
  }

  get(clientId: string): Promise<Client | null> | Client | null {
    const e = this.entries.get(clientId);
    if (e && e.until > Date.now()) return e.client;
    let p = this.loading.get(clientId);
    if (!p) {
      p = findClientForAuthentication(this.sql, clientId).then((client) => {
        this.entries.set(clientId, { client, until: Date.now() + (client ? TTL_MS : MISS_TTL_MS) });
        return client;
      }).finally(() => this.loading.delete(clientId));
      this.loading.set(clientId, p);
    }
    return p;
  }

  /** Forgets every entry (after the notice channel was down: a notice may have been missed). */
  clear(): void { this.entries.clear(); }

  /** Evicts locally and tells every other process. */
  async changed(clientId: string): Promise<void> {
    this.entries.delete(clientId);
    // Publish goes around keyPrefix, so the channel carries the prefix explicitly.
    await this.pub.publish(this.prefix + CLIENT_CHANNEL, clientId).catch((err) => this.log.warn({ err: err.message }, 'client change notice not published'));
  }
}
