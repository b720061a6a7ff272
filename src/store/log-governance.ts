import type { Db } from '../sql.js';

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
