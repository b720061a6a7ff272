import type { Deps } from '../deps.js';
import { adminAudience, ADMIN_SCOPE } from '../admin-access.js';


/**
 * Claims that make a person's access token usable on /api/admin: when the token is for the admin
 * audience with the admin scope, the administrator permissions of the user's roles, scoped to the
 * user's own tenant, or to every tenant for the people of a platform tenant (the console's operators).
 * Read at issuance and at every refresh, so role changes apply within one token lifetime.
 */
export async function adminClaimsFor(deps: Deps, tenantId: string, userId: string, aud: string | string[], scope: string): Promise<Record<string, unknown>> {
  const auds = Array.isArray(aud) ? aud : [aud];
  if (!auds.includes(adminAudience(deps.config.issuer)) || !scope.split(' ').includes(ADMIN_SCOPE)) return {};
  const permissions = (await deps.store.forTenant(tenantId).roles.permissionsOf(userId)).filter((p) => p.startsWith('admin:'));
  const { platform } = await deps.tokens.tenantSettings.get(tenantId);
  return { permissions, tenant_scopes: [platform ? { scope_mode: 'all', tenant_id: null } : { scope_mode: 'none', tenant_id: null }] };
}
