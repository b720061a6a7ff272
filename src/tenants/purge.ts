import { Queue, Worker } from 'bullmq';
import type { Deps } from '../deps.js';
import type { PiiVault } from '../store/pii-vault.js';
import type { AuditActor } from '../store/audit-log.js';
import { closeRedis, createRedis, hashTag, masters } from '../store/redis.js';
import { queuePrefix, redisKeys } from '../store/redis-keys.js';
import type { Sql } from '../store/sql.js';
import { TenantRepository } from '../store/tenants.js';

export const TENANT_PURGE_QUEUE = 'tenant-purge';
const SCHEDULER_ID = 'tenant-purge-resume';
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

/**
 * Deletes the tenant's Redis keys (SCAN, so no blocking KEYS; on a cluster, SCAN of every master, and one
 * DEL per hash tag since a DEL may not cross slots). The keyPrefix is not applied to MATCH nor stripped from results.
 */
export async function purgeTenantKeys(deps: Pick<Deps, 'redis' | 'config'>, tenantId: string): Promise<number> {
  const prefix = deps.config.redisPrefix;
  let n = 0;
  for (const node of masters(deps.redis)) {
    for (const pattern of redisKeys.tenantKeyPatterns(tenantId)) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', prefix + pattern.replace(/[{}]/g, '\\$&'), 'COUNT', 1000);
        cursor = next;
        const byTag = new Map<string, string[]>();
        for (const k of keys) { const tag = hashTag(k); byTag.set(tag, [...(byTag.get(tag) ?? []), k.slice(prefix.length)]); }
        for (const group of byTag.values()) n += await deps.redis.del(...group);
      } while (cursor !== '0');
    }
  }
  return n;
}

/**
 * Purges one tenant marked `deleting`, then marks it `deleted` (its own audit log goes with it; the
 * deletion stays audited in the platform tenant). Its clients are evicted from every process's cache,
 * and its suspension mark is written again after the key purge, so its tokens stay refused.
 */
export async function purgeTenant(deps: Pick<Deps, 'sql' | 'redis' | 'config' | 'log' | 'tokens' | 'store'>, tenantId: string): Promise<boolean> {
  const t = await new TenantRepository(deps.sql, tenantId).get();
  if (!t || t.status !== 'deleting') return false;
  const clients = await deps.sql<{ client_id: string }[]>`select client_id from clients where tenant_id = ${tenantId}`;
  // Shard generations name clients, not tenants (no tenant_id): the tenant's clients' go with it.
  const clientIds = clients.map((c) => c.client_id);
  const shards = await deps.sql`delete from token_shard_generations where client_id = any(${clientIds}::text[])`;
  // Personal data in partitions of other databases first (those in this one go with the users' rows);
  // the tenant's data key goes with tenant_data_keys, so anything missed could no longer be opened.
  const pii = await purgeTenantPii(deps.store.pii, tenantId);
  const rows = shards.count + pii + await purgeTenantRows(deps.sql, tenantId);
  deps.store.pii.dataKeys.forget(tenantId);
  const keys = await purgeTenantKeys(deps, tenantId);
  await new TenantRepository(deps.sql, tenantId).setStatus('deleted');
  await deps.tokens.revocations.markTenant(tenantId, 'deleted');
  await deps.tokens.tenantSettings.changed(tenantId);
  for (const c of clients) await deps.tokens.clients.changed(c.client_id);
  deps.log.info({ tenant: tenantId, rows, keys, actor: PURGER.id }, 'tenant purged');
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

export interface TenantPurger { start(): Promise<void>; close(): Promise<void>; enqueue(tenantId: string): Promise<void> }

/** How long shutdown waits for the purge worker to stop before cutting its connections. */
const CLOSE_WAIT_MS = 2000;

/**
 * The purge as BullMQ jobs: DELETE enqueues one for the tenant at once, and a repeatable job resumes
 * any tenant still `deleting` (a crashed purge). Concurrency 1 per process. Registered on the lifecycle.
 */
export function createTenantPurger(deps: Deps, everyMs = 60_000): TenantPurger {
  let queue: Queue | undefined;
  let worker: Worker | undefined;
  let conns: Array<ReturnType<typeof createRedis>> = [];
  const run = async (tenantId: string | undefined) => {
    for (const id of tenantId ? [tenantId] : await deletingTenants(deps.sql)) await purgeTenant(deps, id);
  };
  return {
    async start() {
      const producer = createRedis(deps.config, 'producer');
      const consumer = createRedis(deps.config, 'worker');
      conns = [producer, consumer];
      const prefix = queuePrefix(deps.config);
      queue = new Queue(TENANT_PURGE_QUEUE, { connection: producer, prefix });
      queue.on('error', () => {});
      worker = new Worker(TENANT_PURGE_QUEUE, async (job) => run((job.data as { tenantId?: string }).tenantId), { connection: consumer, prefix, concurrency: 1 });
      worker.on('error', (err) => deps.log.warn({ err: err.message }, 'tenant purge worker error'));
      worker.on('failed', (_job, err) => deps.log.warn({ err: err.message }, 'tenant purge failed'));
      await queue.upsertJobScheduler(SCHEDULER_ID, { every: everyMs }, { name: 'resume', data: {}, opts: { removeOnComplete: true, removeOnFail: { age: 3600 } } })
        .catch((err: Error) => deps.log.warn({ err: err.message }, 'tenant purge resume not scheduled'));
    },
    async enqueue(tenantId) {
      // A lost enqueue is not lost work: the repeatable job resumes every tenant left `deleting`.
      await queue?.add('purge', { tenantId }, { jobId: `purge-${tenantId}`, attempts: 5, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: true, removeOnFail: { age: 86400 } })
        .catch((err: Error) => deps.log.warn({ err: err.message, tenant: tenantId }, 'tenant purge not enqueued; the resume job will pick it up'));
    },
    async close() {
      // After a Redis restart the worker's blocking connection can wait out its command before close()
      // returns (seen: 10 s to forever in test/cluster/lost-notice); a purge is resumable (batches, and
      // the resume job), so shutdown waits a bounded time and then cuts the connections.
      let timer: NodeJS.Timeout | undefined;
      const bounded = new Promise<void>((resolve) => { timer = setTimeout(resolve, CLOSE_WAIT_MS); });
      await Promise.race([(async () => {
        await worker?.close().catch(() => {});
        await queue?.close().catch(() => {});
      })(), bounded]);
      clearTimeout(timer);
      await Promise.all(conns.map((c) => closeRedis(c)));
      conns = [];
    },
  };
}
