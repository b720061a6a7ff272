import type { Redis } from 'ioredis';
import type { Logger } from '../../log.js';
import { type EnforcementAction } from '../../store/log-governance.js';
import { governanceQueries } from '../../cross-tenant/log-governance.js';
import type { Sql } from '../../sql.js';
import type { Lane, LogAdmission, LogType, Plane } from '../types.js';

/** Under throttle_non_critical one record in THROTTLE_KEEP_EVERY is admitted (per tenant, per process). */
export const THROTTLE_KEEP_EVERY = 10;

interface Rule { action: EnforcementAction; log_type: string | null; plane: string | null; lane: string | null }

/**
 * Quota enforcement as the hot path sees it: `admit` answers from a map held in memory (no I/O); the map
 * is reloaded from the latest evaluations every `refreshMs` and at once on a pub/sub notice that an
 * evaluation changed enforcement. Critical records are always admitted; under block_non_critical the
 * tenant's default and bulk records are refused; under throttle_non_critical one in THROTTLE_KEEP_EVERY
 * is admitted. The caller counts refusals as dropped_records.
 */
export class QuotaAdmission implements LogAdmission {
  private rules = new Map<string, Rule[]>();
  private seen = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private loading: Promise<void> | undefined;

  constructor(private readonly sql: Sql, private readonly log: Logger, private readonly refreshMs: number, private readonly now: () => number = Date.now) {}

  admit(tenantId: string, logType: LogType, plane: Plane, lane: Lane): boolean {
    if (lane === 'critical' || this.rules.size === 0) return true;
    let action: EnforcementAction = 'none';
    for (const list of [this.rules.get(tenantId), this.rules.get('*')]) {
      if (!list) continue;
      for (const r of list) {
        if ((r.log_type && r.log_type !== logType) || (r.plane && r.plane !== plane) || (r.lane && r.lane !== lane)) continue;
        if (r.action === 'block_non_critical') return false;
        action = r.action;
      }
    }
    if (action === 'throttle_non_critical') {
      const n = (this.seen.get(tenantId) ?? 0) + 1;
      this.seen.set(tenantId, n);
      return n % THROTTLE_KEEP_EVERY === 1;
    }
    return true;
  }

  /** Reloads enforcement from the database (coalesced). */
  refresh(): Promise<void> {
    return (this.loading ??= governanceQueries.enforcement(this.sql, this.now()).then((rows) => {
      const next = new Map<string, Rule[]>();
      for (const r of rows) {
        const list = next.get(r.tenant_id) ?? [];
        list.push({ action: r.action, log_type: r.log_type, plane: r.plane, lane: r.lane });
        next.set(r.tenant_id, list);
      }
      this.rules = next;
    }, (err: Error) => { this.log.warn({ err: err.message }, 'log enforcement not refreshed'); }).finally(() => { this.loading = undefined; }));
  }

  /** Listens for change notices on a subscriber connection. */
  async subscribe(sub: Redis, channelName: string): Promise<void> {
    sub.on('message', (ch: string) => { if (ch === channelName) void this.refresh(); });
    await sub.subscribe(channelName);
  }

  async start(): Promise<void> {
    this.timer = setInterval(() => { void this.refresh(); }, this.refreshMs);
    this.timer.unref();
    await this.refresh();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.loading;
  }
}
