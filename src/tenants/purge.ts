import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { RevocationStore } from '../tokens/revocation.js';
import type { Deps } from '../deps.js';
import type { PiiVault } from '../store/pii-vault.js';
import type { AuditActor } from '../store/audit-log.js';
import { closeRedis, createRedis, hashTag, masters } from '../store/redis.js';
import { counterField, queuePrefix, redisKeys } from '../store/redis-keys.js';
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

/** BullMQ job states a job can be removed from (an active job is locked: its consumer checks the tombstone itself). */
const REMOVABLE_STATES = ['wait', 'paused', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed'];

/**
 * Removes the tenant's jobs (`data.tenantId`) from every BullMQ queue of the deployment, in every state
 * but active. The queues are found by a SCAN of their state keys (`<prefix>:<queue>:<state>`), so a
 * queue added later is covered without a list kept here. Returns how many jobs were removed.
 */
export async function purgeTenantJobs(queueRedis: Redis, prefix: string, tenantId: string): Promise<number> {
  const states = new Map<string, string[]>();
  for (const node of masters(queueRedis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', startingWith(`${prefix}:`), 'COUNT', 1000);
      cursor = next;
      for (const k of keys) {
        const rest = k.slice(prefix.length + 1);
        const state = REMOVABLE_STATES.find((st) => rest.endsWith(`:${st}`));
        if (state) states.set(rest.slice(0, -(state.length + 1)), [...(states.get(rest.slice(0, -(state.length + 1))) ?? []), state]);
      }
    } while (cursor !== '0');
  }
  let removed = 0;
  for (const [name, found] of states) {
    const queue = new Queue(name, { connection: queueRedis, prefix });
    queue.on('error', () => {});
    try {
      for (const state of found) {
        const key = `${prefix}:${name}:${state}`;
        const list = (await queueRedis.type(key)) === 'list';
        for (let i = 0; ; i += 1000) {
          const jobIds = list ? await queueRedis.lrange(key, i, i + 999) : await queueRedis.zrange(key, i, i + 999);
          if (!jobIds.length) break;
          // Every key of the deployment's queues has the prefix's hash tag: one slot, so one pipeline.
          const p = queueRedis.pipeline();
          for (const id of jobIds) p.hget(`${prefix}:${name}:${id}`, 'data');
          const datas = (await p.exec()) ?? [];
          const mine = jobIds.filter((_, j) => {
            const raw = datas[j]?.[1];
            try { return typeof raw === 'string' && (JSON.parse(raw) as { tenantId?: unknown } | null)?.tenantId === tenantId; } catch { return false; }
          });
          for (const id of mine) removed += await queue.remove(id);
          if (jobIds.length < 1000) break;
          // What was removed no longer takes a place in the range.
          i -= mine.length;
        }
      }
    } finally {
      await queue.close().catch(() => {});
    }
  }
  return removed;
}

/**
 * Purges one tenant marked `deleting`, then marks it `deleted` (its own audit log goes with it; the
 * deletion stays audited in the platform tenant). Every producer checks the tombstone before writing
 * (docs/admin.md, "Deleting a tenant"), so nothing of the tenant is written behind the purge: its rows,
 * then its Redis keys (usage counters included), then its queued jobs. Its clients are evicted from every
 * process's cache, and its suspension mark is written again after the key purge, so its tokens stay refused.
 */
export async function purgeTenant(deps: Pick<Deps, 'sql' | 'redis' | 'config' | 'log' | 'tokens' | 'store'>, queueRedis: Redis, tenantId: string): Promise<boolean> {
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
    for (const id of tenantId ? [tenantId] : await deletingTenants(deps.sql)) await purgeTenant(deps, conns[0]!, id);
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
