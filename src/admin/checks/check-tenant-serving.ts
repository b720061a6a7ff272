import type { Deps } from '../../deps.js';
import { Forbidden } from '../../errors.js';
import { REFUSED_STATUSES, TenantRepository } from '../../store/tenants.js';

/**
 * Step 7: the tenant acted on is not suspended or being deleted (403 forbidden), unless the caller is a
 * platform admin, who must be able to inspect and unsuspend it. The token's own tenant was answered by
 * the revocation check's Redis read; only a non-platform caller acting on another tenant (an `allow`
 * scope, rare) costs a Postgres read.
 */
export async function checkTenantServing(deps: Deps, a: { home: string; tenantId: string; platform: boolean; homeRefused: boolean }): Promise<void> {
  if (a.platform) return;
  const refused = () => new Forbidden('forbidden', 'This tenant is suspended.');
  if (a.homeRefused) throw refused();
  if (a.tenantId === a.home) return;
  const t = await new TenantRepository(deps.sql, a.tenantId).get();
  if (t && REFUSED_STATUSES.has(t.status)) throw refused();
}
