import t from 'tap';
import { twoTenants } from '../helpers/two-tenants.js';

// What tenant A's log governance repository holds (quota policies, evaluations, usage aggregates), tenant B's
// cannot read, list, count, change or delete.
const { sql, tenantA, A, B } = await twoTenants('loggov');
await A.logGovernance.insertPolicy({ id: 'lqp_a1', name: 'a', scope: 'tenant', log_type: null, plane: null, lane: 'bulk', metric_name: 'records',
  window_kind: 'day', soft_limit: 5, hard_limit: 10, warning_ratio: 0.8, enforcement_mode: 'block_non_critical', active: true });
await sql`insert into log_quota_evaluations (tenant_id, id, quota_policy_id, metric_name, window_kind, window_start_at, window_end_at, value, hard_limit, state, enforcement_action, evaluated_at)
  values (${tenantA}, 'lqe_a1', 'lqp_a1', 'records', 'day', 0, 86400000, 3, 10, 'ok', 'none', 1)`;
await sql`insert into log_usage_aggregates (tenant_id, id, log_type, plane, lane, metric_name, window_kind, window_start_at, window_end_at, value)
  values (${tenantA}, 'lua_a1', 'token', 'data', 'bulk', 'records', 'hour', 0, 3600000, 3)`;

t.test('B cannot read or list A\'s governance rows', async (t) => {
  t.equal(await B.logGovernance.policy('lqp_a1'), null);
  t.same(await B.logGovernance.policies(), []);
  t.same(await B.logGovernance.evaluations({ limit: 10, offset: 0 }), []);
  t.equal(await B.logGovernance.evaluationCount(), 0);
  t.same(await B.logGovernance.usage({ limit: 10 }), []);
  t.equal((await A.logGovernance.usage({ limit: 10 })).length, 1);
  t.equal(await A.logGovernance.evaluationCount(), 1);
});

t.test('B cannot change or delete A\'s policy', async (t) => {
  t.equal(await B.logGovernance.updatePolicy('lqp_a1', { hard_limit: 1 }), null);
  t.equal(await B.logGovernance.deletePolicy('lqp_a1'), false);
  t.match(await A.logGovernance.policy('lqp_a1'), { hard_limit: '10', enforcement_mode: 'block_non_critical' });
});
