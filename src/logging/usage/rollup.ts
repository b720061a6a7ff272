import type { Redis } from 'ioredis';
import { newId } from '../../store/ids.js';
import { type MinuteValue } from '../../store/log-governance.js';
import { governanceQueries } from '../../cross-tenant/log-governance.js';
import { parseField, redisKeys } from '../../store/redis-keys.js';
import type { Sql } from '../../sql.js';
import { MINUTE_RETENTION_MS } from './meter.js';

/**
 * Rolls the Redis minute counters into Postgres windows: each minute's absolute values are upserted as
 * `minute` rows and the hour/day/month windows holding them recomputed from those rows (so a run
 * repeated, or one that crashed half-way, writes the same). Windows that ended are `final`. Minutes
 * older than MINUTE_RETENTION_MS are removed from Redis once rolled. Counters of a tombstoned tenant
 * (one whose purge has begun; a process counted before it heard) are never rolled up: they are deleted.
 */
export async function rollupUsage(sql: Sql, redis: Redis, now: number): Promise<{ minutes: number; counters: number }> {
  const minutes = (await redis.zrange(redisKeys.logUsageMinutes, 0, -1)).map(Number);
  if (!minutes.length) return { minutes: 0, counters: 0 };
  const p = redis.pipeline();
  for (const m of minutes) p.hgetall(redisKeys.logUsageMinute(m));
  const res = (await p.exec()) ?? [];
  const rows: Array<MinuteValue & { field: string }> = [];
  minutes.forEach((minute, i) => {
    const [err, h] = res[i] ?? [];
    if (err || !h) return;
    for (const [f, v] of Object.entries(h as Record<string, string>)) {
      const k = parseField(f);
      if (k) rows.push({ ...k, minute, value: Number(v), field: f });
    }
  });
  const { dropped } = await governanceQueries.rollup(sql, rows.map(({ field: _f, ...r }) => r), now, () => newId('lua'));
  if (dropped.size) {
    const d = redis.multi();
    for (const r of rows) if (dropped.has(r.tenant_id)) d.hdel(redisKeys.logUsageMinute(r.minute), r.field);
    await d.exec();
  }
  const old = minutes.filter((m) => m + 60_000 + MINUTE_RETENTION_MS < now);
  if (old.length) {
    const d = redis.multi();
    for (const m of old) d.del(redisKeys.logUsageMinute(m));
    d.zrem(redisKeys.logUsageMinutes, ...old.map(String));
    await d.exec();
  }
  return { minutes: minutes.length, counters: rows.length };
}
