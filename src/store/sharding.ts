import type { Db, TxSql } from '../sql.js';

export interface GenerationRow {
  generation: number; client_id: string; shard_count: number; activated_at: number; deprecated_at: number | null; created_by: string; notes: string | null;
}
export interface PlatformSetting<T> { value: T; updated_at: number; updated_by: string }

// Serialises resharding across processes (arbitrary constant).
const SHARDING_LOCK = 7_414_200_030;
const AUTH_CODE_SHARD_COUNT = 'auth_code_shard_count';
/** What the auth code shard count is while no one has set it. */
export const DEFAULT_AUTH_CODE_SHARDS = 16;
/** The scope of the global generation in token_shard_generations. */
const GLOBAL = '';

/**
 * Holds the resharding lock until the transaction ends, so two changes of one scope cannot both take
 * the same next generation number.
 */
export async function lockSharding(tx: TxSql): Promise<void> {
  await tx`select pg_advisory_xact_lock(${SHARDING_LOCK})`;
}

/** Deprecates the scope's current generation and makes a new one current, numbered N+1 within its scope. */
async function addGeneration(db: Db, scope: string, shardCount: number, by: string, notes: string | null): Promise<GenerationRow> {
  // Numbered per scope (spec: generation N -> N+1): after the scope's own latest; a client's first
  // override follows the global generation it used until now.
  const [top] = await db<{ next: number }[]>`select coalesce(
      (select max(generation) from token_shard_generations where client_id = ${scope}),
      (select max(generation) from token_shard_generations where client_id = ${GLOBAL}), 0) + 1 as next`;
  await db`update token_shard_generations set deprecated_at = now_ms() where client_id = ${scope} and deprecated_at is null`;
  const [row] = await db<GenerationRow[]>`insert into token_shard_generations (generation, client_id, shard_count, created_by, notes)
    values (${top!.next}, ${scope}, ${shardCount}, ${by}, ${notes}) returning *`;
  return row!;
}

/**
 * Per-client refresh token shard generations of one tenant's clients. token_shard_generations has no
 * tenant column (client ids are unique across tenants), so every statement reaches a client's
 * generations through the tenant's row in `clients`: another tenant's client reads as absent.
 */
export class ShardingRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  /** A client's own generations, newest first (empty: it follows the global ones); null when the client is not the tenant's. */
  async clientGenerations(clientId: string): Promise<GenerationRow[] | null> {
    const rows = await this.db<(GenerationRow | { generation: null })[]>`select g.* from clients c
        left join token_shard_generations g on g.client_id = c.client_id
      where c.tenant_id = ${this.tenantId} and c.client_id = ${clientId} order by g.generation desc`;
    if (!rows.length) return null;
    return rows.filter((r): r is GenerationRow => r.generation !== null);
  }

  /** A new current generation for one of the tenant's clients (in a transaction, under `lockSharding`); null when the client is not the tenant's. */
  async addClientGeneration(clientId: string, shardCount: number, by: string, notes: string | null): Promise<GenerationRow | null> {
    const [own] = await this.db`select 1 from clients where tenant_id = ${this.tenantId} and client_id = ${clientId} for share`;
    return own ? addGeneration(this.db, clientId, shardCount, by, notes) : null;
  }
}

/**
 * The platform-wide sharding settings: the global refresh token generation and the auth code shard
 * count. These are deliberately not tenant data, so they take no tenant: every tenant's tokens use
 * them (until a client gets an override), and only platform administrators change them.
 */
export class PlatformSharding {
  constructor(private readonly db: Db) {}

  /** Global generations, newest first (the migration creates the first one). */
  globalGenerations(): Promise<GenerationRow[]> {
    return this.db<GenerationRow[]>`select * from token_shard_generations where client_id = ${GLOBAL} order by generation desc`;
  }

  /** A new current global generation (in a transaction, under `lockSharding`). */
  addGlobalGeneration(shardCount: number, by: string, notes: string | null): Promise<GenerationRow> {
    return addGeneration(this.db, GLOBAL, shardCount, by, notes);
  }

  /** The current generation of every scope, for the per-process cache the token endpoints read. */
  currentGenerations(): Promise<Array<{ client_id: string; generation: number; shard_count: number }>> {
    return this.db<{ client_id: string; generation: number; shard_count: number }[]>`
      select distinct on (client_id) client_id, generation, shard_count from token_shard_generations
      where deprecated_at is null order by client_id, generation desc`;
  }

  /** The auth code shard count a global resharding must match; null while the default applies. */
  async authCodeShardCount(): Promise<PlatformSetting<number> | null> {
    const [row] = await this.db<PlatformSetting<number>[]>`select value, updated_at, updated_by from platform_settings where key = ${AUTH_CODE_SHARD_COUNT}`;
    return row ?? null;
  }

  async setAuthCodeShardCount(n: number, by: string): Promise<PlatformSetting<number>> {
    const sql = this.db;
    const [row] = await sql<PlatformSetting<number>[]>`insert into platform_settings (key, value, updated_by) values (${AUTH_CODE_SHARD_COUNT}, ${sql.json(n)}, ${by})
      on conflict (key) do update set value = excluded.value, updated_by = excluded.updated_by, updated_at = now_ms()
      returning value, updated_at, updated_by`;
    return row!;
  }
}
