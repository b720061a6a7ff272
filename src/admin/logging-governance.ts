import type { Deps } from '../deps.js';
import { Forbidden, NotFound, ValidationError } from '../errors.js';
import type { Route } from '../http/types.js';
import { newId } from '../store/ids.js';
import type { QuotaEvaluationRow, QuotaPolicyRow, UsageRow } from '../store/log-governance.js';
import { listTenant } from './logging.js';
import { adminRoute, fetched, found } from './route.js';

const READ = 'admin:logging:read';
const WRITE = 'admin:logging:write';
const nn = (v: number | string | null) => (v === null ? null : Number(v));
const policyNotFound = () => new NotFound('not_found', 'No such quota policy.');

function usageView(u: UsageRow) {
  return {
    id: u.id, tenant_id: u.tenant_id, tenant_key: u.tenant_key === '' ? null : u.tenant_key, log_type: u.log_type, plane: u.plane, lane: u.lane,
    metric_name: u.metric_name, window_kind: u.window_kind, window_start_at: Number(u.window_start_at), window_end_at: Number(u.window_end_at),
    value: Number(u.value), final: u.final, refreshed_at: Number(u.refreshed_at), created_at: Number(u.created_at), updated_at: Number(u.updated_at),
    metadata_json: JSON.stringify({ final: u.final, source: 'redis_minute_counters' }), source_table: 'log_usage_aggregates',
  };
}

function evaluationView(e: QuotaEvaluationRow) {
  return {
    id: e.id, quota_policy_id: e.quota_policy_id, tenant_id: e.tenant_id, tenant_key: e.tenant_key, log_type: e.log_type, plane: e.plane, lane: e.lane,
    metric_name: e.metric_name, window_kind: e.window_kind, window_start_at: Number(e.window_start_at), window_end_at: Number(e.window_end_at),
    value: Number(e.value), soft_limit: nn(e.soft_limit), hard_limit: Number(e.hard_limit), state: e.state, enforcement_action: e.enforcement_action,
    evaluated_at: Number(e.evaluated_at), notification_event_id: e.notification_event_id, metadata_json: JSON.stringify(e.metadata ?? {}),
  };
}

function policyView(p: QuotaPolicyRow) {
  return {
    id: p.id, tenant_id: p.tenant_id, name: p.name, scope: p.scope, log_type: p.log_type, plane: p.plane, lane: p.lane, metric_name: p.metric_name,
    window_kind: p.window_kind, soft_limit: nn(p.soft_limit), hard_limit: Number(p.hard_limit), warning_ratio: Number(p.warning_ratio),
    enforcement_mode: p.enforcement_mode, active: p.active, created_at: Number(p.created_at), updated_at: Number(p.updated_at),
  };
}

function checkLimits(soft: number | null | undefined, hard: number): void {
  if (soft !== null && soft !== undefined && soft > hard) throw new ValidationError({ soft_limit: ['must not exceed hard_limit'] });
}

/** Usage aggregates and quota evaluations (the spec's), quota policies (beyond it). Issue 13 items 4, 5, 7. */
export function loggingGovernanceRoutes(deps: Deps): Route[] {
  const tags = ['logging'];
  return [
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/logging-policies/usage-aggregates', permission: READ, tags, query: 'query.log-usage-aggregates',
      summary: 'A tenant\'s log usage per window (hour, day, month; UTC; minute windows only when asked for by window_kind), newest window first', response: { 200: 'admin.log-usage-aggregate-list' },
      handler: async ({ deps, ctx, query }) => {
        const repo = deps.store.forTenant(listTenant(ctx, query)).logGovernance;
        const rows = await repo.usage({ tenant_key: query.tenant_key, metric_name: query.metric_name, window_kind: query.window_kind, since: query.since, until: query.until, limit: query.limit });
        return { body: { items: rows.map(usageView) } };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/logging-policies/quota-evaluations', permission: READ, tags, query: 'query.log-quota-evaluations',
      summary: 'A tenant\'s quota evaluations, newest first', response: { 200: 'admin.log-quota-evaluation-list' },
      handler: async ({ deps, ctx, query }) => {
        const repo = deps.store.forTenant(listTenant(ctx, query)).logGovernance;
        const size = query.limit;
        const rows = await repo.evaluations({ state: query.state, limit: size, offset: (query.page - 1) * size });
        const total = await repo.evaluationCount(query.state);
        return { body: { items: rows.map(evaluationView), total, page: { number: query.page, size, has_more: query.page * size < total } } };
      },
    }),

    // --- quota policies (beyond the spec) ---
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/logging-policies/quotas', permission: READ, tags,
      summary: 'The tenant\'s log quota policies', response: { 200: 'admin.log-quota-policy-list' },
      handler: async ({ store }) => ({ body: { items: (await store.logGovernance.policies()).map(policyView) } }),
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/logging-policies/quotas/:id', permission: READ, tags,
      summary: 'A log quota policy', response: { 200: 'admin.log-quota-policy' }, errors: [404],
      handler: fetched((s, id) => s.logGovernance.policy(id), policyView, policyNotFound),
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/logging-policies/quotas', permission: WRITE, tags, body: 'admin.log-quota-policy-create',
      summary: 'Create a log quota policy (scope platform: every tenant\'s usage together, platform administrators only)', response: { 201: 'admin.log-quota-policy' },
      audit: { action: 'log_quota_policy.create', resourceType: 'log_quota_policy' },
      handler: async ({ ctx, body, mutate }) => {
        const scope = body.scope ?? 'tenant';
        if (scope === 'platform' && !ctx.platform) throw new Forbidden('forbidden', 'Only platform administrators may create platform quota policies.');
        checkLimits(body.soft_limit, body.hard_limit);
        const id = newId('lqp');
        const out = await mutate(async (_tx, store) => {
          const p = policyView(await store.logGovernance.insertPolicy({
            id, name: body.name ?? null, scope, log_type: body.log_type ?? null, plane: body.plane ?? null, lane: body.lane ?? null, metric_name: body.metric_name,
            window_kind: body.window_kind, soft_limit: body.soft_limit ?? null, hard_limit: body.hard_limit, warning_ratio: body.warning_ratio ?? 0.8,
            enforcement_mode: body.enforcement_mode, active: body.active ?? true,
          }));
          return { result: p, resourceId: id, after: p };
        });
        return { status: 201, body: out };
      },
    }),
    adminRoute(deps, {
      method: 'PATCH', path: '/api/admin/logging-policies/quotas/:id', permission: WRITE, tags, body: 'admin.log-quota-policy-update',
      summary: 'Change a log quota policy', response: { 200: 'admin.log-quota-policy' }, errors: [404],
      audit: { action: 'log_quota_policy.update', resourceType: 'log_quota_policy' },
      handler: async ({ body, params, mutate }) => {
        const out = await mutate(async (_tx, store) => {
          const cur = found(await store.logGovernance.policy(params.id!, true), policyNotFound);
          checkLimits(body.soft_limit !== undefined ? body.soft_limit : nn(cur.soft_limit), body.hard_limit ?? Number(cur.hard_limit));
          const next = policyView((await store.logGovernance.updatePolicy(cur.id, { ...body }))!);
          return { result: next, before: policyView(cur), after: next };
        });
        return { body: out };
      },
    }),
    adminRoute(deps, {
      method: 'DELETE', path: '/api/admin/logging-policies/quotas/:id', permission: WRITE, tags,
      summary: 'Delete a log quota policy (its evaluations stay)', response: { 204: null }, errors: [404],
      audit: { action: 'log_quota_policy.delete', resourceType: 'log_quota_policy', severity: 'warn' },
      handler: async ({ params, mutate }) => {
        await mutate(async (_tx, store) => {
          const cur = found(await store.logGovernance.policy(params.id!, true), policyNotFound);
          await store.logGovernance.deletePolicy(cur.id);
          return { result: null, before: policyView(cur) };
        });
        return { status: 204 };
      },
    }),
  ];
}
