import type { Redis } from 'ioredis';
import { declareEvents } from '../../events/declare.js';
import { newId } from '../../store/ids.js';
import { windowOf, type EnforcementAction, type QuotaPolicyRow, type QuotaState } from '../../store/log-governance.js';
import { governanceQueries } from '../../cross-tenant/log-governance.js';
import type { Sql } from '../../sql.js';
import { lockLiveTenants } from '../../store/tenants.js';

/** A quota evaluation that is not ok notifies the tenant (its outbox id is the notification_event_id). */
const quotaEvents = declareEvents(['logging.quota_exceeded']);

/** The state of a value against a policy: hard, then soft (the hard limit when none), then warning_ratio × soft. */
export function stateOf(p: Pick<QuotaPolicyRow, 'soft_limit' | 'hard_limit' | 'warning_ratio'>, value: number): QuotaState {
  const hard = Number(p.hard_limit);
  const soft = p.soft_limit === null ? hard : Number(p.soft_limit);
  if (value >= hard) return 'hard_exceeded';
  if (p.soft_limit !== null && value >= soft) return 'soft_exceeded';
  if (value >= Number(p.warning_ratio) * soft) return 'warning';
  return 'ok';
}

/**
 * What a policy's mode does in a state: observe never acts; notify notifies; throttle_non_critical
 * throttles once over the soft (or hard) limit; block_non_critical throttles over the soft limit and
 * blocks over the hard one. Below those, a non-observe policy not ok notifies.
 */
export function actionOf(mode: QuotaPolicyRow['enforcement_mode'], state: QuotaState): EnforcementAction {
  if (state === 'ok' || mode === 'observe') return 'none';
  if (mode === 'block_non_critical' && state === 'hard_exceeded') return 'block_non_critical';
  if ((mode === 'block_non_critical' || mode === 'throttle_non_critical') && state !== 'warning') return 'throttle_non_critical';
  return 'notify';
}

/**
 * One evaluation run: every active policy against its current window (usage rolled up just before),
 * one appended evaluation row each. A state other than ok (of a policy not in observe mode) writes a
 * `logging.quota_exceeded` event to the outbox once per (policy, window, state), in the evaluation's
 * transaction; its outbox id is the evaluation's notification_event_id. When enforcement changes, a
 * notice on `channelName` tells every process to refresh its admission. Nothing is written for a
 * policy whose tenant is tombstoned (checked and locked in the evaluation's transaction).
 */
export async function evaluateQuotas(sql: Sql, publisher: Redis | null, channelName: string, now: number): Promise<{ evaluated: number; changed: boolean }> {
  let changed = false;
  const policies = await governanceQueries.activePolicies(sql);
  for (const p of policies) {
    const w = windowOf(p.window_kind, now);
    const value = await governanceQueries.usageValue(sql, p, w.start);
    const state = stateOf(p, value);
    const action = actionOf(p.enforcement_mode, state);
    const last = await governanceQueries.lastEvaluation(sql, p);
    const enforcing = (a: string | undefined) => a === 'block_non_critical' || a === 'throttle_non_critical';
    if ((enforcing(action) || enforcing(last?.enforcement_action)) && (last?.enforcement_action !== action || Number(last.window_start_at) !== w.start)) changed = true;
    await sql.begin(async (tx) => {
      if (!(await lockLiveTenants(tx, [p.tenant_id])).size) return;
      // Two runs overlapping (a run longer than the interval, or one asked for by hand) take turns per
      // policy, so the second sees the first's notification instead of writing the event again.
      await tx`select pg_advisory_xact_lock(hashtext(${`svc:log-quota:${p.tenant_id}:${p.id}`}))`;
      let eventId: string | null = null;
      if (state !== 'ok' && p.enforcement_mode !== 'observe') {
        const [had] = await tx<Array<{ event_id: string }>>`select event_id::text from log_quota_notifications
          where tenant_id = ${p.tenant_id} and quota_policy_id = ${p.id} and window_start_at = ${w.start} and state = ${state}`;
        if (had) eventId = had.event_id;
        else {
          eventId = await quotaEvents.emitReturningId(tx, p.tenant_id, 'logging.quota_exceeded', {
            quota_policy_id: p.id, scope: p.scope, state, enforcement_action: action, metric_name: p.metric_name, window_kind: p.window_kind,
            window_start_at: w.start, window_end_at: w.end, value, soft_limit: p.soft_limit === null ? null : Number(p.soft_limit), hard_limit: Number(p.hard_limit),
            log_type: p.log_type, plane: p.plane, lane: p.lane,
          });
          await tx`insert into log_quota_notifications (tenant_id, quota_policy_id, window_start_at, state, event_id)
            values (${p.tenant_id}, ${p.id}, ${w.start}, ${state}, ${eventId}) on conflict do nothing`;
        }
      }
      await tx`insert into log_quota_evaluations ${tx({
        tenant_id: p.tenant_id, id: newId('lqe'), quota_policy_id: p.id, tenant_key: null, log_type: p.log_type, plane: p.plane, lane: p.lane,
        metric_name: p.metric_name, window_kind: p.window_kind, window_start_at: w.start, window_end_at: w.end, value, soft_limit: p.soft_limit, hard_limit: p.hard_limit,
        state, enforcement_action: action, evaluated_at: now, notification_event_id: eventId,
        metadata: tx.json({ scope: p.scope, enforcement_mode: p.enforcement_mode, warning_ratio: Number(p.warning_ratio), policy_name: p.name } as never),
      } as Record<string, unknown>)}`;
    });
  }
  if (changed && publisher) await publisher.publish(channelName, 'changed').catch(() => 0);
  return { evaluated: policies.length, changed };
}
