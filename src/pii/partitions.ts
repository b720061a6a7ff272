import type { PiiPartitionConfig } from '../config.js';
import { ServiceUnavailable } from '../errors.js';
import { createSql, type Sql } from '../sql.js';

/** One PII partition: where its `pii_<name>.user_pii` table is, and on which connection. */
export interface PiiPartition {
  readonly name: string;
  /** `pii_<name>.user_pii`, the same in the main database and in a partition's own. */
  readonly table: string;
  readonly sql: Sql;
  /** True when the partition is a schema of the main database (its rows join the core row in one statement). */
  readonly inMain: boolean;
}

// Processes creating the same schema at once would race on pg_namespace's unique index.
const ENSURE_LOCK = 7_414_200_110;

/**
 * The partitions a process knows (config `piiPartitions`): `default` plus those configured, each a schema
 * in the main database or in its own database (PII_DATABASE_URL_<NAME>). Created once per process,
 * closed with it.
 */
export class PiiPartitions {
  private readonly byName = new Map<string, PiiPartition>();
  private readonly own: Sql[] = [];

  constructor(main: Sql, configs: readonly PiiPartitionConfig[], poolSize = 4) {
    for (const c of configs) {
      const sql = c.databaseUrl ? createSql({ databaseUrl: c.databaseUrl, databasePoolSize: poolSize }) : main;
      if (c.databaseUrl) this.own.push(sql);
      this.byName.set(c.name, { name: c.name, table: `pii_${c.name}.user_pii`, sql, inMain: !c.databaseUrl });
    }
  }

  names(): string[] { return [...this.byName.keys()]; }
  has(name: string): boolean { return this.byName.has(name); }
  all(): PiiPartition[] { return [...this.byName.values()]; }
  inMain(): PiiPartition[] { return this.all().filter((p) => p.inMain); }

  get(name: string): PiiPartition {
    const p = this.byName.get(name);
    // A row naming a partition this process was not configured with: its data cannot be read here.
    if (!p) throw new ServiceUnavailable(`PII partition "${name}" is not configured on this server.`, 5);
    return p;
  }

  /**
   * Creates each partition's schema and table when missing (idempotent; at start, so a partition added to
   * PII_PARTITIONS needs no migration). In the main database rows reference users(id), so deleting a
   * user or tenant removes them; a separate database cannot, and is cleaned by the user/tenant delete paths.
   */
  async ensure(): Promise<void> {
    for (const p of this.byName.values()) {
      const schema = `pii_${p.name}`;
      await p.sql.begin(async (tx) => {
        await tx`select pg_advisory_xact_lock(${ENSURE_LOCK})`;
        await tx`create schema if not exists ${tx(schema)}`;
        await tx`create table if not exists ${tx(p.table)} (
          tenant_id text not null,
          user_id text not null ${p.inMain ? tx`references public.users(id) on delete cascade` : tx``},
          sealed bytea not null,
          updated_at bigint not null default (extract(epoch from clock_timestamp()) * 1000)::bigint,
          primary key (tenant_id, user_id))`;
      });
    }
  }

  /** Whether a partition answers (the stats endpoint refuses to report a partition it cannot read). */
  async probe(name: string): Promise<boolean> {
    const p = this.get(name);
    try {
      await p.sql`select 1 from ${p.sql(p.table)} limit 1`;
      return true;
    } catch { return false; }
  }

  async close(): Promise<void> {
    await Promise.all(this.own.map((s) => s.end({ timeout: 5 })));
  }
}
