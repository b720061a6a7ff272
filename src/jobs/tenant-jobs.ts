import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { masters } from '../store/redis.js';

/** A SCAN MATCH pattern for every key starting with `text` (glob characters escaped). */
const startingWith = (text: string) => `${text.replace(/[*?[\]\\{}]/g, '\\$&')}*`;

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
