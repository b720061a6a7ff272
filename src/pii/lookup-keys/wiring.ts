import type { Redis } from 'ioredis';
import type { Config } from '../../config.js';
import type { Lifecycle } from '../../lifecycle.js';
import type { Logger } from '../../log.js';
import type { PiiVault } from '../vault.js';
import type { Sql } from '../../sql.js';
import { KeyringFollower } from './follower.js';

/**
 * Makes a long-running process follow lookup-key rotations: its vault indexes with the follower's keys,
 * read before the process serves (lifecycle start) and refreshed until it closes.
 */
export function followLookupKeys(c: { config: Config; sql: Sql; redis: Redis | null; vault: PiiVault; role: string; log: Logger; lifecycle?: Lifecycle }): KeyringFollower {
  const follower = new KeyringFollower({
    sql: c.sql, redis: c.redis, kek: c.config.keyEncryptionKey, role: c.role, log: c.log,
    refreshMs: c.config.lookupKeyringRefreshMs, liveMs: c.config.lookupKeyringLiveMs,
  });
  c.vault.useKeyring(follower);
  c.lifecycle?.add('lookup keyring', { start: () => follower.start(), close: () => follower.close() });
  return follower;
}
