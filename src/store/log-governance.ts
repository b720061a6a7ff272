import type { Db, Sql } from '../sql.js';
import { lockLiveTenants, TOMBSTONE_STATUSES } from './tenants.js';

export type WindowKind = 'minute' | 'hour' | 'day' | 'month';
export type QuotaState = 'ok' | 'warning' | 'soft_exceeded' | 'hard_exceeded';
export type EnforcementMode = 'observe' | 'notify' | 'throttle_non_critical' | 'block_non_critical';
export type EnforcementAction = 'none' | 'notify' | 'throttle_non_critical' | 'block_non_critical';

export interface UsageRow {
  tenant_id: string; id: string; tenant_key: string; log_type: string; plane: string; lane: string; metric_name: string;
  window_kind: WindowKind; window_start_at: number; window_end_at: number; value: number; final: boolean; created_at: number; updated_at: number; refreshed_at: number;
}
export interface QuotaPolicyRow {
  tenant_id: string; id: string; name: string | null; scope: 'platform' | 'tenant'; log_type: string | null; plane: string | null; lane: string | null;
  metric_name: string; window_kind: WindowKind; soft_limit: number | null; hard_limit: number; warning_ratio: number;
  enforcement_mode: EnforcementMode; active: boolean; created_at: number; updated_at: number;
}
export interface QuotaEvaluationRow {
  tenant_id: string; id: string; quota_policy_id: string; tenant_key: string | null; log_type: string | null; plane: string | null; lane: string | null;
  metric_name: string; window_kind: WindowKind; window_start_at: number; window_end_at: number; value: number; soft_limit: number | null; hard_limit: number;
  state: QuotaState; enforcement_action: EnforcementAction; evaluated_at: number; notification_event_id: string | null; metadata: Record<string, unknown>;
}
export type QuotaPolicyInput = Omit<QuotaPolicyRow, 'tenant_id' | 'created_at' | 'updated_at'>;

/** A minute counter's absolute value, as read from Redis. */
export interface MinuteValue { tenant_id: string; tenant_key: string; log_type: string; plane: string; lane: string; metric_name: string; minute: number; value: number }

/** The UTC window of `kind` holding `ts`. */
export function windowOf(kind: WindowKind, ts: number): { start: number; end: number } {
  const d = new Date(ts);
  switch (kind) {
    case 'minute': { const s = Math.floor(ts / 60_000) * 60_000; return { start: s, end: s + 60_000 }; }
    case 'hour': { const s = Math.floor(ts / 3_600_000) * 3_600_000; return { start: s, end: s + 3_600_000 }; }
    case 'day': { const s = Math.floor(ts / 86_400_000) * 86_400_000; return { start: s, end: s + 86_400_000 }; }
    case 'month': return { start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
  }
}

/** A tenant's usage aggregates, quota policies and evaluations. */
export class LogGovernanceRepository {
  constructor(private readonly db: Db, readonly tenantId: string) {}

  /** Windows of the tenant, newest first; minute rows only when asked for by `window_kind` (they are the rollup's own, see docs/logging.md). */
  usage(f: { tenant_key?: string | undefined; metric_name?: string | undefined; window_kind?: string | undefined; since?: number | undefined; until?: number | undefined; limit: number }): Promise<UsageRow[]> {
    const db = this.db;
    return db<UsageRow[]>`select * from log_usage_aggregates where tenant_id = ${this.tenantId}
      ${f.tenant_key !== undefined ? db`and tenant_key = ${f.tenant_key}` : db``}
      ${f.metric_name !== undefined ? db`and metric_name = ${f.metric_name}` : db``}
      ${f.window_kind !== undefined ? db`and window_kind = ${f.window_kind}` : db`and window_kind <> 'minute'`}
      ${f.since !== undefined ? db`and window_start_at >= ${f.since}` : db``}
      ${f.until !== undefined ? db`and window_start_at <= ${f.until}` : db``}
      order by window_start_at desc, window_kind, log_type, plane, lane, metric_name limit ${f.limit}`;
  }

  policies(): Promise<QuotaPolicyRow[]> {
    return this.db<QuotaPolicyRow[]>`select * from log_quota_policies where tenant_id = ${this.tenantId} order by created_at, id`;
  }

  async policy(id: string, lock = false): Promise<QuotaPolicyRow | null> {
    const [r] = await this.db<QuotaPolicyRow[]>`select * from log_quota_policies where tenant_id = ${this.tenantId} and id = ${id} ${lock ? this.db`for update` : this.db``}`;
    return r ?? null;
  }

  async insertPolicy(p: QuotaPolicyInput): Promise<QuotaPolicyRow> {
    const [r] = await this.db<QuotaPolicyRow[]>`insert into log_quota_policies ${this.db({ ...p, tenant_id: this.tenantId })} returning *`;
    return r!;
  }

  async updatePolicy(id: string, p: Partial<QuotaPolicyInput>): Promise<QuotaPolicyRow | null> {
    const set = Object.fromEntries(Object.entries(p).filter(([k, v]) => v !== undefined && k !== 'id'));
    const [r] = await this.db<QuotaPolicyRow[]>`update log_quota_policies set ${this.db({ ...set, updated_at: Date.now() } as Record<string, unknown>)}
      where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return r ?? null;
  }

  async deletePolicy(id: string): Promise<boolean> {
    return (await this.db`delete from log_quota_policies where tenant_id = ${this.tenantId} and id = ${id}`).count > 0;
  }

  evaluations(f: { state?: string | undefined; limit: number; offset: number }): Promise<QuotaEvaluationRow[]> {
    const db = this.db;
    return db<QuotaEvaluationRow[]>`select * from log_quota_evaluations where tenant_id = ${this.tenantId}
      ${f.state !== undefined ? db`and state = ${f.state}` : db``} order by evaluated_at desc, id desc limit ${f.limit} offset ${f.offset}`;
  }

  async evaluationCount(state?: string): Promise<number> {
    const db = this.db;
    const [r] = await db<Array<{ n: number }>>`select count(*)::int as n from log_quota_evaluations where tenant_id = ${this.tenantId}
      ${state !== undefined ? db`and state = ${state}` : db``}`;
    return r!.n;
  }
}

/** The upsert of a recomputed window: always refreshed; updated only when its value or finality changed. */
const REFRESH = `value = excluded.value, final = excluded.final, refreshed_at = now_ms(),
  updated_at = case when log_usage_aggregates.value is distinct from excluded.value or log_usage_aggregates.final is distinct from excluded.final
    then now_ms() else log_usage_aggregates.updated_at end`;

/** Cross-tenant work of the governance jobs (rollup, evaluation, enforcement refresh). */
export const governanceQueries = {
  /**
   * Upserts absolute minute values, then recomputes the hour/day/month windows holding them from the
   * minute rows. Idempotent. Values of a tenant that is tombstoned (or unknown) are not written: they
   * are answered as `dropped`, for the caller to delete at their source. `refreshed_at` says when a
   * window was last recomputed, `updated_at` when its value (or finality) last changed.
   */
  async rollup(sql: Sql, all: MinuteValue[], now: number, newId: () => string): Promise<{ dropped: Set<string> }> {
    if (!all.length) return { dropped: new Set() };
    return sql.begin(async (tx) => {
      const live = await lockLiveTenants(tx, all.map((r) => r.tenant_id));
      const dropped = new Set(all.map((r) => r.tenant_id).filter((t) => !live.has(t)));
      const rows = all.filter((r) => live.has(r.tenant_id));
      const minutes = rows.map((r) => ({ ...r, id: newId(), window_kind: 'minute', window_start_at: r.minute, window_end_at: r.minute + 60_000, final: r.minute + 60_000 <= now }));
      for (let i = 0; i < minutes.length; i += 1000) {
        const part = minutes.slice(i, i + 1000);
        await tx`insert into log_usage_aggregates ${tx(part.map(({ minute: _m, ...x }) => x), 'id', 'tenant_id', 'tenant_key', 'log_type', 'plane', 'lane', 'metric_name', 'window_kind', 'window_start_at', 'window_end_at', 'value', 'final')}
          on conflict (tenant_id, tenant_key, log_type, plane, lane, metric_name, window_kind, window_start_at)
          do update set ${tx.unsafe(REFRESH)}`;
      }
      for (const kind of ['hour', 'day', 'month'] as const) {
        const wins = new Map<string, { tenant_id: string; start: number; end: number }>();
        for (const r of rows) { const w = windowOf(kind, r.minute); wins.set(`${r.tenant_id} ${w.start}`, { tenant_id: r.tenant_id, ...w }); }
        for (const w of wins.values()) {
          await tx`insert into log_usage_aggregates (id, tenant_id, tenant_key, log_type, plane, lane, metric_name, window_kind, window_start_at, window_end_at, value, final)
            select ${newId()} || '_' || row_number() over (), tenant_id, tenant_key, log_type, plane, lane, metric_name, ${kind}, ${w.start}, ${w.end}, sum(value), ${w.end <= now}
            from log_usage_aggregates where tenant_id = ${w.tenant_id} and window_kind = 'minute' and window_start_at >= ${w.start} and window_start_at < ${w.end}
            group by tenant_id, tenant_key, log_type, plane, lane, metric_name
            on conflict (tenant_id, tenant_key, log_type, plane, lane, metric_name, window_kind, window_start_at)
            do update set ${tx.unsafe(REFRESH)}`;
        }
      }
      return { dropped };
    }) as Promise<{ dropped: Set<string> }>;
  },

  /** Active policies of tenants that are not tombstoned. */
  activePolicies(sql: Sql): Promise<QuotaPolicyRow[]> {
    return sql<QuotaPolicyRow[]>`select p.* from log_quota_policies p join tenants t on t.id = p.tenant_id
      where p.active and t.status <> all(${TOMBSTONE_STATUSES as string[]}::text[]) order by p.tenant_id, p.id`;
  },

  /** The usage a policy counts in one window: its tenant's (all tenants' for a platform policy), narrowed by its log_type/plane/lane. */
  async usageValue(sql: Sql, p: QuotaPolicyRow, start: number): Promise<number> {
    const [r] = await sql<Array<{ v: string | null }>>`select sum(value)::text as v from log_usage_aggregates
      where window_kind = ${p.window_kind} and window_start_at = ${start} and metric_name = ${p.metric_name}
      ${p.scope === 'tenant' ? sql`and tenant_id = ${p.tenant_id}` : sql``}
      ${p.log_type ? sql`and log_type = ${p.log_type}` : sql``} ${p.plane ? sql`and plane = ${p.plane}` : sql``} ${p.lane ? sql`and lane = ${p.lane}` : sql``}`;
    return Number(r?.v ?? 0);
  },

  /** The last evaluation of a policy (to tell whether enforcement changed). */
  async lastEvaluation(sql: Sql, p: QuotaPolicyRow): Promise<QuotaEvaluationRow | null> {
    const [r] = await sql<QuotaEvaluationRow[]>`select * from log_quota_evaluations where tenant_id = ${p.tenant_id} and quota_policy_id = ${p.id} order by evaluated_at desc, id desc limit 1`;
    return r ?? null;
  },

  /**
   * Enforcement in force now: the latest evaluation of every active policy whose window has not ended
   * and whose action throttles or blocks. tenant_id '*' for platform policies (every tenant).
   */
  enforcement(sql: Sql, now: number): Promise<Array<{ tenant_id: string; action: EnforcementAction; log_type: string | null; plane: string | null; lane: string | null }>> {
    return sql`select case when p.scope = 'platform' then '*' else p.tenant_id end as tenant_id, e.enforcement_action as action, p.log_type, p.plane, p.lane
      from log_quota_policies p
      join lateral (select * from log_quota_evaluations e where e.tenant_id = p.tenant_id and e.quota_policy_id = p.id order by evaluated_at desc, id desc limit 1) e on true
      where p.active and e.window_end_at > ${now} and e.enforcement_action in ('throttle_non_critical', 'block_non_critical')`;
  },
};
