import { byteaArray, type Db, type Sql, type TxSql } from '../sql.js';

// The lookup key of email addresses is one per deployment, and users written before migration 0110 may
// belong to any tenant: re-indexing, verifying and sealing walk every user in id order, each row carrying
// its own tenant, and every row written is written under that tenant.

/** One user as the platform walks read it: its tenant, partition and (joined) sealed personal data. */
export interface WalkedUser { id: string; tenant_id: string; pii_partition: string; created_at: string; sealed: Buffer | null }

/**
 * The next `limit` users of every tenant after `cursor` (by id), share-locked against a change of
 * address, for the lookup-key re-index and its verification (one key for the whole deployment).
 * `join` is the vault's join of the main database's partitions (src/pii/vault.ts joinSql).
 */
export function usersAfter(tx: TxSql, join: { joins: string; column: string }, cursor: string | null, limit: number, createdUpTo: number | null): Promise<WalkedUser[]> {
  return tx<WalkedUser[]>`
    select u.id, u.tenant_id, u.pii_partition, u.created_at, ${tx.unsafe(join.column)} from users u ${tx.unsafe(join.joins)}
    where ${cursor === null ? tx`true` : tx`u.id > ${cursor}`} ${createdUpTo === null ? tx`` : tx`and u.created_at <= ${createdUpTo}`}
    order by u.id limit ${limit} for share of u`;
}

/**
 * Writes the index entries of a batch of users of any tenants under one key generation (each entry under
 * its user's tenant; existing entries kept). Returns how many entries of another user of the same tenant
 * hold the same index (conflicts), which the verification then fails on.
 */
export async function writeIndexEntries(tx: TxSql, generation: number, entries: { tenants: string[]; users: string[]; bidxs: Buffer[] }): Promise<number> {
  const [c] = await tx<{ n: number }[]>`with x as (select * from unnest(${entries.tenants}::text[], ${entries.users}::text[], ${byteaArray(tx, entries.bidxs)}::bytea[]) as x(t, u, b)),
    i as (insert into user_email_index (tenant_id, generation, bidx, user_id) select t, ${generation}, b, u from x on conflict do nothing returning 1)
    select (select count(*) from x join user_email_index e on e.tenant_id = x.t and e.generation = ${generation} and e.bidx = x.b and e.user_id <> x.u)::int as n, (select count(*) from i) as inserted`;
  return c!.n;
}

/** How many users of a batch (of any tenants) are found by their index entry under `generation`, each in its own tenant. */
export async function countIndexed(tx: TxSql, generation: number, entries: { tenants: string[]; users: string[]; bidxs: Buffer[] }): Promise<number> {
  const [c] = await tx<{ n: number }[]>`select count(*)::int as n from unnest(${entries.tenants}::text[], ${entries.users}::text[], ${byteaArray(tx, entries.bidxs)}::bytea[]) as x(t, u, b)
    where exists (select 1 from user_email_index e where e.tenant_id = x.t and e.generation = ${generation} and e.bidx = x.b and e.user_id = x.u)`;
  return c!.n;
}

/** Deletes up to `limit` index entries of a key generation no longer used, in every tenant (the key was the deployment's). */
export async function dropIndexEntries(tx: TxSql, generation: number, limit: number): Promise<number> {
  const r = await tx`delete from user_email_index where ctid in (select ctid from user_email_index where generation = ${generation} limit ${limit})`;
  return r.count;
}

/** How many users of every tenant exist at the re-index cutoff: the rotation's inventory. */
export async function usersCreatedBy(tx: TxSql, cutoff: number): Promise<number> {
  const [c] = await tx<{ n: number }[]>`select count(*)::bigint as n from users where created_at <= ${cutoff}`;
  return Number(c!.n);
}

/** Whether any user (of any tenant) still holds personal data in clear, written before migration 0110. */
export async function hasLegacyUsers(sql: Db): Promise<boolean> {
  return (await sql<{ x: boolean }[]>`select exists (select 1 from users where email is not null) as x`)[0]!.x;
}

/** The tenants with users still in clear: each needs its data key before the sealing transactions. */
export async function legacyUserTenants(sql: Sql): Promise<string[]> {
  return (await sql<{ tenant_id: string }[]>`select distinct tenant_id from users where email is not null`).map((r) => r.tenant_id);
}

/** The next `limit` users in clear, of any tenant, locked for sealing (rows another sealer holds are skipped). */
export function lockLegacyUsers(tx: TxSql, limit: number): Promise<Array<{ id: string; tenant_id: string; email: string; name: string | null; metadata: Record<string, unknown> }>> {
  return tx`select id, tenant_id, email, name, metadata from users where email is not null order by id limit ${limit} for update skip locked`;
}

/** Partition moves of any tenant left by a crashed process (started more than `olderThanMs` ago), for the start-up finisher. */
export async function staleMoves<T extends object>(sql: Sql, olderThanMs: number): Promise<T[]> {
  return await sql<T[]>`select tenant_id, user_id, from_partition, to_partition, step from pii_moves
    where started_at < now_ms() - ${olderThanMs} order by started_at limit 1000`;
}
