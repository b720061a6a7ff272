import type { Deps } from '../deps.js';
import type { TokenServices } from '../services.js';
import type { AuditActor } from '../store/audit-log.js';
import { approvalsDueForExpiry } from '../cross-tenant/sweeps.js';
import { settle } from './service.js';

const SWEEPER: AuditActor = { type: 'machine', id: 'system:elevation-sweep', displayName: 'Elevation expiry sweep', email: null };

/**
 * Moves every request, step and grant past its expires_at to expired (reads already treat them so),
 * revoking the tokens of each grant that ends, with its security.alert event and an audit entry, one
 * transaction per request. Returns how many requests it settled. Runs as the periodic `elevation-sweep`
 * job (src/jobs/table.ts), one run per ELEVATION_SWEEP_MS for the whole deployment.
 */
export async function sweepExpiredApprovals(deps: Pick<Deps, 'sql' | 'store'> & { tokens: Pick<TokenServices, 'revocations'> }, now = Date.now()): Promise<number> {
  let n = 0;
  for (const due of await approvalsDueForExpiry(deps.sql, now)) {
    await deps.store.transaction(due.tenant_id, async (store, tx) => {
      const r = await store.approvals.getRequest(due.id, { lock: true });
      if (!r) return;
      const before = r.status;
      const s = await settle(deps, tx, store, r, { type: SWEEPER.type, id: SWEEPER.id }, now);
      if (!s.changed) return;
      await store.auditLog.record(SWEEPER, {
        action: 'approval_request.expire', resourceType: 'approval_request', resourceId: r.id, severity: 'info',
        metadata: { grants: s.grants.map((g) => ({ id: g.id, status: g.status })) }, before: { status: before }, after: { status: s.status },
      });
      n++;
    });
  }
  return n;
}
