import { Forbidden } from '../../errors.js';
import type { HttpRequest } from '../../http/request.js';
import type { JwtPayload } from '../../tokens/jwt.js';
import type { TenantScope } from '../types.js';

/** How a route picks its tenant: `selected` honours X-Tenant-Id within the token's tenant scopes; `own` is always the token's. */
export type TenantMode = 'selected' | 'own';

/**
 * Step 6: the tenant of the request. Platform admins (scope `all`) may name any tenant with X-Tenant-Id,
 * `allow` scopes name the others a token may act on; naming any other is 403, never data. That holds on
 * `own` routes too, which then act on the token's tenant: one rule for every route, so no route answers a
 * header that all the others refuse.
 */
export function resolveTenant(p: JwtPayload, req: HttpRequest, mode: TenantMode): { tenantId: string; platform: boolean } {
  const scopes = (Array.isArray(p.tenant_scopes) ? p.tenant_scopes : []) as TenantScope[];
  const platform = scopes.some((s) => s.scope_mode === 'all');
  const home = String(p.tenant);
  const named = req.headers['x-tenant-id'];
  if (named !== undefined && named !== home && !platform && !scopes.some((s) => s.scope_mode === 'allow' && s.tenant_id === named)) {
    throw new Forbidden('forbidden', 'You may not act on that tenant.');
  }
  return { tenantId: mode === 'own' ? home : named ?? home, platform };
}
