import type { Sql } from '../sql.js';
import { lockLiveTenants, TOMBSTONE_STATUSES } from '../store/tenants.js';
import { windowOf, type EnforcementAction, type MinuteValue, type QuotaEvaluationRow, type QuotaPolicyRow } from '../store/log-governance.js';

const REFRESH = `value = excluded.value, final = excluded.final, refreshed_at = now_ms(),
  updated_at = case when log_usage_aggregates.value is distinct from excluded.value or log_usage_aggregates.final is distinct from excluded.final
    then now_ms() else log_usage_aggregates.updated_at end`;

/**
 * Work of the governance jobs (rollup, evaluation, enforcement refresh), one per deployment: usage is
 * counted per tenant but rolled up and evaluated for every tenant in one pass, and platform quota
 * policies span every tenant.
 */
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
