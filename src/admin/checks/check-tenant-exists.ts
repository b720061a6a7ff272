import type { Deps } from '../../deps.js';
import { NotFound } from '../../errors.js';
import { tenantExists } from '../../store/tenant-exists.js';

/**
 * Step 6b: a tenant named with X-Tenant-Id must exist, or reads would answer empty lists and writes
 * would fail on foreign keys. The token's own tenant is not looked up (it was checked when issued).
 */
export async function checkTenantExists(deps: Deps, tenantId: string, home: string): Promise<void> {
  if (tenantId === home) return;
  if (!(await tenantExists(deps.store.sql, tenantId))) throw new NotFound('not_found', 'The tenant does not exist.');
}
