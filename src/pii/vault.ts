import type { Config } from '../config.js';
import { ServiceUnavailable } from '../errors.js';
import { NotifiedCache } from '../notified-cache.js';
import type { Sql } from '../sql.js';
import { blindIndex, initialLookupKey, staticKeyring } from './blind-index.js';
import type { LookupKeyring } from './keyring.js';
import { PiiPartitions, type PiiPartition } from './partitions.js';
import { openPii, sealPii, TenantDataKeys, type PiiRecord } from './sealing.js';

/** Index entries of one address: one per key of the keyring's write (or read) set. */
export interface IndexEntries { generations: number[]; bidxs: Buffer[] }

/**
 * Everything a process needs to store and find users' personal data: the partitions, the tenants'
 * data keys and the lookup keyring. Created once per process and handed to the Store.
 */
export class PiiVault {
  private joinCache = new Map<string, string>();
  private readonly statements = new Map<string, string>();
  /**
   * Tenants' partition settings, read at most every 2 s per process (a first login must not pay a query
   * for them); a PUT in this process forgets them at once, other processes within the TTL. The loader is
   * the caller's (its own connection or transaction), so concurrent misses do not share a load.
   */
  private readonly settingsCache = new NotifiedCache<unknown>({ name: 'partition settings', ttlMs: 2000, shareLoads: false });

  constructor(readonly main: Sql, readonly partitions: PiiPartitions, readonly dataKeys: TenantDataKeys, private ring: LookupKeyring) {}

  static fromConfig(config: Pick<Config, 'piiPartitions' | 'keyEncryptionKey'>, sql: Sql, keyring?: LookupKeyring): PiiVault {
    return new PiiVault(sql, new PiiPartitions(sql, config.piiPartitions), new TenantDataKeys(config.keyEncryptionKey),
      keyring ?? staticKeyring(initialLookupKey(config.keyEncryptionKey)));
  }

  get keyring(): LookupKeyring { return this.ring; }
  /** The rotation's keyring replaces the static one when the process starts following rotations. */
  useKeyring(ring: LookupKeyring): void { this.ring = ring; }

  /** Entries an index write writes for an address (every write key). */
  writeEntries(email: string): IndexEntries {
    const keys = this.ring.writeKeys();
    return { generations: keys.map((k) => k.generation), bidxs: keys.map((k) => blindIndex(k.key, email)) };
  }

  /** Entries a lookup tries for an address (every read key). */
  readEntries(email: string): IndexEntries {
    const keys = this.ring.readKeys();
    return { generations: keys.map((k) => k.generation), bidxs: keys.map((k) => blindIndex(k.key, email)) };
  }

  /** The tenant's data key, created on the main pool (never inside a caller's transaction that may roll back). */
  dataKey(tenantId: string): Promise<Buffer> | Buffer {
    return this.dataKeys.cached(tenantId) ?? this.dataKeys.get(this.main, tenantId);
  }

  async seal(tenantId: string, userId: string, r: PiiRecord): Promise<Buffer> {
    return sealPii(await this.dataKey(tenantId), tenantId, userId, r);
  }

  async open(tenantId: string, userId: string, sealed: Buffer): Promise<PiiRecord> {
    return openPii(await this.dataKey(tenantId), tenantId, userId, sealed);
  }

  partition(name: string): PiiPartition { return this.partitions.get(name); }

  /**
   * `left join` of every partition in the main database onto the user rows aliased `alias`, and the
   * column `sealed` taken from whichever holds the row: a read of a user in a main-database partition is
   * one statement. Partition names are validated by the config, so the text is safe to inline.
   */
  joinSql(alias: string): { joins: string; column: string } {
    const key = alias;
    let joins = this.joinCache.get(key);
    const inMain = this.partitions.inMain();
    if (joins === undefined) {
      joins = inMain.map((p, i) => `left join "pii_${p.name}"."user_pii" p${i} on p${i}.tenant_id = ${alias}.tenant_id and p${i}.user_id = ${alias}.id`).join(' ');
      this.joinCache.set(key, joins);
    }
    const column = inMain.length ? `coalesce(${inMain.map((_, i) => `p${i}.sealed`).join(', ')}) as sealed` : 'null::bytea as sealed';
    return { joins, column };
  }

  /** A tenant's partition settings, through the per-process cache above. */
  async settings<T>(tenantId: string, load: () => Promise<T>): Promise<T> {
    return (await this.settingsCache.get(tenantId, load)) as T;
  }
  forgetSettings(tenantId: string): void { this.settingsCache.forget(tenantId); }

  /** A statement text built once per process from the partition joins (hot paths run it prepared). */
  statement(name: string, build: (join: (alias: string) => { joins: string; column: string }) => string): string {
    let text = this.statements.get(name);
    if (text === undefined) { text = build((alias) => this.joinSql(alias)); this.statements.set(name, text); }
    return text;
  }

  /** Runs a statement on a partition's own database; an unreachable partition is a 503, never a wrong answer. */
  async onPartition<T>(p: PiiPartition, fn: (sql: Sql) => Promise<T>): Promise<T> {
    try { return await fn(p.sql); } catch (err) {
      const code = (err as { code?: string }).code;
      if (code && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|CONNECT_TIMEOUT|CONNECTION_|57P0|08)/.test(code)) {
        throw new ServiceUnavailable(`PII partition "${p.name}" is unavailable.`, 5, err);
      }
      throw err;
    }
  }

  close(): Promise<void> { return this.partitions.close(); }
}
