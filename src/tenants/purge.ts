import type { Redis } from 'ioredis';
import { RevocationStore } from '../tokens/revocation.js';
import type { Deps } from '../deps.js';
import type { PiiVault } from '../pii/vault.js';
import type { AuditActor } from '../store/audit-log.js';
import { purgeTenantJobs } from '../jobs/tenant-jobs.js';
import type { TokenServices } from '../services.js';
import { hashTag, masters } from '../store/redis.js';
import { counterField, queuePrefix, redisKeys } from '../store/redis-keys.js';
import type { Sql } from '../sql.js';
import { TenantRepository } from '../store/tenants.js';

const BATCH = 5000;
const PURGER: AuditActor = { type: 'machine', id: 'system:tenant-purge', displayName: 'Tenant purge', email: null };

/** Every table of the schema with a `tenant_id` column, found at run time: a table added later is purged without changes here. */
export async function tenantTables(sql: Sql): Promise<string[]> {
  const rows = await sql<{ table_name: string }[]>`select c.table_name from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = current_schema() and c.column_name = 'tenant_id' and t.table_type = 'BASE TABLE' order by c.table_name`;
  return rows.map((r) => r.table_name);
}

/**
 * Deletes every row of the tenant in every table with a tenant_id column, in batches (each batch its
 * own statement, so a crash resumes where it stopped: what is deleted stays deleted). Tables are
 * taken in any order; a batch refused by a foreign key (a child not yet purged) is retried on the next
 * pass, so children go before parents without a hand-kept list. Returns the rows deleted.
 */
export async function purgeTenantRows(sql: Sql, tenantId: string): Promise<number> {
  let pending = await tenantTables(sql);
  let total = 0;
  while (pending.length) {
    const blocked: string[] = [];
    for (const table of pending) {
      try {
        for (;;) {
          const r = await sql`delete from ${sql(table)} where ctid = any(array(select ctid from ${sql(table)} where tenant_id = ${tenantId} limit ${BATCH}))`;
          total += r.count;
          if (r.count < BATCH) break;
        }
      } catch (err) {
        if ((err as { code?: string }).code !== '23503') throw err;
        blocked.push(table);
      }
    }
    if (blocked.length === pending.length) throw new Error(`tenant purge stuck on foreign keys: ${blocked.join(', ')}`);
    pending = blocked;
  }
  return total;
}

/** What names a tenant in Redis, gathered from its rows before they are deleted. */
export interface TenantRedisIds { clientIds: string[]; checkKeyIds: string[]; revokedJtis: string[] }

/** The ids of a tenant that its Redis keys are named by (its clients, check API keys and revoked tokens). */
export async function tenantRedisIds(sql: Sql, tenantId: string): Promise<TenantRedisIds> {
  const [clients, keys, jtis] = await Promise.all([
    sql<Array<{ id: string }>>`select client_id as id from clients where tenant_id = ${tenantId}`,
    sql<Array<{ id: string }>>`select id from check_api_keys where tenant_id = ${tenantId}`,
    sql<Array<{ id: string }>>`select jti as id from revocations where tenant_id = ${tenantId}`,
  ]);
  return { clientIds: clients.map((r) => r.id), checkKeyIds: keys.map((r) => r.id), revokedJtis: jtis.map((r) => r.id) };
}

/** The tenant a JSON value of redisKeys.tenantValueKeys names, or null. */
function tenantInJson(raw: string | null): string | null {
  if (!raw) return null;
  try {
    const v = JSON.parse(raw) as { tenantId?: unknown; request?: { tenantId?: unknown } } | null;
    const t = v?.tenantId ?? v?.request?.tenantId;
    return typeof t === 'string' ? t : null;
  } catch { return null; }
}

/** A key of another type than its family's is nobody's; any other error fails the purge (its job is retried). */
const notOfType = (err: Error): null => { if (/WRONGTYPE/.test(err.message)) return null; throw err; };

/** A SCAN MATCH pattern for every key starting with `text` (glob characters escaped). */
const startingWith = (text: string) => `${text.replace(/[*?[\]\\{}]/g, '\\$&')}*`;

/**
 * Deletes the tenant's Redis keys in one SCAN of every key of the deployment (no blocking KEYS; on a
 * cluster, every master): those its name gives away (redisKeys.tenantOwns), those whose value names it
 * (redisKeys.tenantValueKeys: read, then deleted when it is this tenant's), and its fields of the usage
 * minute hashes. One DEL per hash tag, as a DEL may not cross slots. The keyPrefix is not applied to
 * MATCH nor stripped from results. It costs a read per session, interaction and code of every tenant:
 * a purge is rare and runs in the background.
 */
export async function purgeTenantKeys(deps: Pick<Deps, 'redis' | 'config'>, tenantId: string, ids: TenantRedisIds): Promise<number> {
  const prefix = deps.config.redisPrefix;
  const owns = redisKeys.tenantOwns({
    tenant: tenantId, clientIds: new Set(ids.clientIds.flatMap((c) => [c, c.slice(0, 200)])), checkKeyIds: new Set(ids.checkKeyIds),
    revokedJtiKeys: new Set(ids.revokedJtis.map((j) => RevocationStore.jtiKey(j)).filter((k): k is string => k !== null)),
  });
  const usagePrefix = redisKeys.logUsageMinute(0).slice(0, -1);
  const fieldPrefix = counterField(tenantId, '', '', '', '', '').slice(0, tenantId.length + 1);
  let n = 0;
  for (const node of masters(deps.redis)) {
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', startingWith(prefix), 'COUNT', 1000);
      cursor = next;
      const keys = found.map((k) => k.slice(prefix.length));
      const gone = keys.filter(owns);
      await Promise.all(keys.map(async (k) => {
        if (k.startsWith(usagePrefix)) {
          const fields = (await deps.redis.hkeys(k)).filter((f) => f.startsWith(fieldPrefix));
          if (fields.length) n += await deps.redis.hdel(k, ...fields);
          return;
        }
        const family = redisKeys.tenantValueKeys.find((f) => k.startsWith(f.prefix));
        // Authorization codes: the record only (`ac:{<hash>}`); its companions go with it.
        if (!family || (family.prefix === 'ac:{' && !k.endsWith('}'))) return;
        const owner = family.read === 'hash-t' ? await deps.redis.hget(k, 't').catch(notOfType) : tenantInJson(await deps.redis.get(k).catch(notOfType));
        if (owner === tenantId) gone.push(k, ...(family.prefix === 'ac:{' ? redisKeys.authCodeCompanions(k) : []));
      }));
      const byTag = new Map<string, string[]>();
      for (const k of gone) { const tag = hashTag(k); byTag.set(tag, [...(byTag.get(tag) ?? []), k]); }
      for (const group of byTag.values()) n += await deps.redis.del(...group);
    } while (cursor !== '0');
  }
  return n;
}

/** What a purge runs with: the stores, and the token services whose caches and marks it updates. */
export type PurgeDeps = Pick<Deps, 'sql' | 'redis' | 'config' | 'log' | 'store'> & { tokens: Pick<TokenServices, 'revocations' | 'tenantSettings' | 'clients'> };

/**
 * Purges one tenant marked `deleting`, then marks it `deleted` (its own audit log goes with it; the
 * deletion stays audited in the platform tenant). Every producer checks the tombstone before writing
 * (docs/admin.md, "Deleting a tenant"), so nothing of the tenant is written behind the purge: its rows,
 * then its Redis keys (usage counters included), then its queued jobs. Its clients are evicted from every
 * process's cache, and its suspension mark is written again after the key purge, so its tokens stay refused.
 */
export async function purgeTenant(deps: PurgeDeps, queueRedis: Redis, tenantId: string): Promise<boolean> {
  const t = await new TenantRepository(deps.sql, tenantId).get();
  if (!t || t.status !== 'deleting') return false;
  // Read before the rows go: the Redis keys of its clients, check API keys and revoked tokens are named by them.
  const redisIds = await tenantRedisIds(deps.sql, tenantId);
  // Shard generations name clients, not tenants (no tenant_id): the tenant's clients' go with it.
  const shards = await deps.sql`delete from token_shard_generations where client_id = any(${redisIds.clientIds}::text[])`;
  // Personal data in partitions of other databases first (those in this one go with the users' rows);
  // the tenant's data key goes with tenant_data_keys, so anything missed could no longer be opened.
  const pii = await purgeTenantPii(deps.store.pii, tenantId);
  const rows = shards.count + pii + await purgeTenantRows(deps.sql, tenantId);
  deps.store.pii.dataKeys.forget(tenantId);
  const keys = await purgeTenantKeys(deps, tenantId, redisIds);
  const jobs = await purgeTenantJobs(queueRedis, queuePrefix(deps.config), tenantId);
  await new TenantRepository(deps.sql, tenantId).setStatus('deleted');
  await deps.tokens.revocations.markTenant(tenantId, 'deleted');
  await deps.tokens.tenantSettings.changed(tenantId);
  for (const c of redisIds.clientIds) await deps.tokens.clients.changed(c);
  deps.log.info({ tenant: tenantId, rows, keys, jobs, actor: PURGER.id }, 'tenant purged');
  return true;
}

/** Deletes the tenant's PII rows in every partition that lives in its own database, in batches. */
export async function purgeTenantPii(vault: PiiVault, tenantId: string): Promise<number> {
  let total = 0;
  for (const p of vault.partitions.all().filter((x) => !x.inMain)) {
    for (;;) {
      const r = await vault.onPartition(p, (s) => s`delete from ${s(p.table)} where ctid = any(array(select ctid from ${s(p.table)} where tenant_id = ${tenantId} limit ${BATCH}))`);
      total += r.count;
      if (r.count < BATCH) break;
    }
  }
  return total;
}

/** Every tenant left in `deleting` (a purge interrupted by a crash). */
async function deletingTenants(sql: Sql): Promise<string[]> {
  return (await sql<{ id: string }[]>`select id from tenants where status = 'deleting'`).map((r) => r.id);
}

/**
 * The `tenant-purge` and `tenant-purge-resume` jobs (src/jobs/table.ts): purges the tenant named, or
 * (the periodic resume) every tenant still `deleting` after a crashed purge.
 */
export async function purgeDeleting(deps: PurgeDeps, queueRedis: Redis, tenantId: string | undefined): Promise<void> {
  for (const id of tenantId ? [tenantId] : await deletingTenants(deps.sql)) await purgeTenant(deps, queueRedis, id);
}

/** Queues the purge of a tenant just marked `deleting`. A lost enqueue is not lost work: the periodic resume job purges every tenant left `deleting`. */
export async function enqueueTenantPurge(deps: Pick<Deps, 'jobs' | 'log'>, tenantId: string): Promise<void> {
  await deps.jobs.add('tenant-purge', { tenantId }, { name: 'purge', jobId: `purge-${tenantId}` })
    .catch((err: Error) => deps.log.warn({ err: err.message, tenant: tenantId }, 'tenant purge not enqueued; the resume job will pick it up'));
}
