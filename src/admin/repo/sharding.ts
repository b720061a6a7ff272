import type { Sql, TxSql } from '../../store/sql.js';

type Db = Sql | TxSql;

export interface GenerationRow {
  generation: number; client_id: string; shard_count: number; activated_at: number; deprecated_at: number | null; created_by: string; notes: string | null;
}

// Serialises resharding across processes (arbitrary constant).
const SHARDING_LOCK = 7_414_200_030;
export const AUTH_CODE_SHARD_COUNT = 'auth_code_shard_count';

export async function lockSharding(tx: TxSql): Promise<void> {
  await tx`select pg_advisory_xact_lock(${SHARDING_LOCK})`;
}

/** Generations of one scope ('' is global), newest first. Shard generations are platform-wide, not tenant data. */
export async function generations(sql: Db, clientId: string): Promise<GenerationRow[]> {
  return sql<GenerationRow[]>`select * from token_shard_generations where client_id = ${clientId} order by generation desc`;
}

/** Deprecates the scope's current generation and makes a new one current; generation numbers are global. */
export async function addGeneration(tx: TxSql, clientId: string, shardCount: number, by: string, notes: string | null): Promise<GenerationRow> {
  const [top] = await tx<{ next: number }[]>`select coalesce(max(generation), 0) + 1 as next from token_shard_generations`;
  const next = top!.next;
  await tx`update token_shard_generations set deprecated_at = now_ms() where client_id = ${clientId} and deprecated_at is null`;
  const [row] = await tx<GenerationRow[]>`insert into token_shard_generations (generation, client_id, shard_count, created_by, notes)
    values (${next}, ${clientId}, ${shardCount}, ${by}, ${notes}) returning *`;
  return row!;
}

export async function getSetting<T>(sql: Db, key: string): Promise<{ value: T; updated_at: number; updated_by: string } | null> {
  const [row] = await sql<{ value: T; updated_at: number; updated_by: string }[]>`select value, updated_at, updated_by from platform_settings where key = ${key}`;
  return row ?? null;
}

export async function putSetting(sql: Db, key: string, value: unknown, by: string): Promise<void> {
  await sql`insert into platform_settings (key, value, updated_by) values (${key}, ${sql.json(value as never)}, ${by})
    on conflict (key) do update set value = excluded.value, updated_by = excluded.updated_by, updated_at = now_ms()`;
}
