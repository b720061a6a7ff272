import type { Redis } from 'ioredis';
import type { Logger } from '../../log.js';
import { counterField, redisKeys, tenantOfCounterField } from '../../store/redis-keys.js';
import type { TenantTombstones } from '../../tenants/fence.js';
import type { Lane, LogType, Plane, UsageMeter, UsageMetric } from '../types.js';

/** How long a minute's counters stay in Redis after the minute (the rollup reads them until then). */
export const MINUTE_RETENTION_MS = 2 * 3_600_000;

/** Nothing is tombstoned (a meter outside a process's governance, e.g. in a unit test). */
const NO_TOMBSTONES: TenantTombstones = { has: () => false };

/**
 * Counts usage in process memory per (minute, counter) and flushes it in one MULTI (HINCRBY per counter,
 * ZADD of the minutes, PEXPIRE) every `flushMs`: never a round trip per record. A failed flush puts the
 * counts back for the next one. A tombstoned tenant is not counted, and counts taken before its
 * tombstone was known are dropped at the flush (the rollup drops any that still reach Redis). A
 * lifecycle resource (start/close; close flushes what is left).
 */
export class RedisUsageMeter implements UsageMeter {
  private pending = new Map<number, Map<string, number>>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(private readonly redis: Redis, private readonly log: Logger, private readonly flushMs: number, private readonly now: () => number = Date.now,
    private readonly tombstones: TenantTombstones = NO_TOMBSTONES) {}

  count(tenantId: string, logType: LogType, plane: Plane, lane: Lane, metric: UsageMetric, n: number): void {
    if (!(n > 0) || this.tombstones.has(tenantId)) return;
    const minute = Math.floor(this.now() / 60_000) * 60_000;
    let m = this.pending.get(minute);
    if (!m) this.pending.set(minute, (m = new Map()));
    const f = counterField(tenantId, '', logType, plane, lane, metric);
    m.set(f, (m.get(f) ?? 0) + n);
  }

  start(): void {
    this.timer = setInterval(() => { void this.flush(); }, this.flushMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => this.flush());
    if (!this.pending.size) return Promise.resolve();
    const batch = this.pending;
    this.pending = new Map();
    for (const counters of batch.values()) {
      for (const f of counters.keys()) if (this.tombstones.has(tenantOfCounterField(f))) counters.delete(f);
    }
    for (const [minute, counters] of batch) if (!counters.size) batch.delete(minute);
    if (!batch.size) return Promise.resolve();
    const multi = this.redis.multi();
    for (const [minute, counters] of batch) {
      const key = redisKeys.logUsageMinute(minute);
      for (const [f, n] of counters) multi.hincrby(key, f, n);
      multi.zadd(redisKeys.logUsageMinutes, minute, String(minute));
      multi.pexpireat(key, minute + 60_000 + MINUTE_RETENTION_MS + 3_600_000);
    }
    this.flushing = multi.exec().then((res) => {
      if (!res || res.some(([err]) => err)) throw new Error('usage flush failed');
    }).catch((err: Error) => {
      this.log.warn({ err: err.message }, 'log usage not flushed; retrying');
      for (const [minute, counters] of batch) {
        let m = this.pending.get(minute);
        if (!m) this.pending.set(minute, (m = new Map()));
        for (const [f, n] of counters) m.set(f, (m.get(f) ?? 0) + n);
      }
    }).finally(() => { this.flushing = undefined; });
    return this.flushing;
  }
}
