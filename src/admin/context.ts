import type { Deps } from '../deps.js';
import { Unauthorized } from '../errors.js';
import { adminMetadataUrl, bearerChallenge } from '../resources/metadata-url.js';
import type { HttpRequest } from '../http/request.js';
import { checkAudience } from './checks/check-audience.js';
import { checkClient } from './checks/check-client.js';
import { checkNotRevoked } from './checks/check-not-revoked.js';
import { checkPermission } from './checks/check-permission.js';
import { checkTenantExists } from './checks/check-tenant-exists.js';
import { readToken } from './checks/read-token.js';
import { resolveTenant, type TenantMode } from './checks/resolve-tenant.js';
import { checkTenantServing } from './checks/check-tenant-serving.js';
import { enforcePolicies } from './policy-engine.js';
import type { AdminContext } from './types.js';
import { tenantClassOf } from '../metrics.js';

export { adminAudience, ADMIN_SCOPE, hasPermission } from '../admin-access.js';
export type { AdminContext } from './types.js';

/**
 * Authenticates an admin request and resolves its tenant, one named step after another (./checks):
 * token, audience, client, revocation, scope and permission, tenant, tenant not suspended, then the target tenant's admin
 * policies (policy-engine.ts). Each step throws the spec's error; the first failure answers.
 */
export async function adminContext(deps: Deps, req: HttpRequest, permission: string, tenant: TenantMode = 'selected'): Promise<AdminContext> {
  try {
    return await authenticated(deps, req, permission, tenant);
  } catch (err) {
    // RFC 9728 5.1: a 401 points the caller at the administration API's protected resource metadata.
    if (err instanceof Unauthorized) throw new Unauthorized(err.code as ConstructorParameters<typeof Unauthorized>[0], err.message, bearerChallenge(adminMetadataUrl(deps.config.issuer)));
    throw err;
  }
}

async function authenticated(deps: Deps, req: HttpRequest, permission: string, tenant: TenantMode): Promise<AdminContext> {
  const p = readToken(deps, req);
  checkAudience(p, deps.config.issuer);
  const client = await checkClient(deps, p);
  const { tenantRefused } = await checkNotRevoked(deps, p);
  const permissions = checkPermission(p, permission);
  const { tenantId, platform } = resolveTenant(p, req, tenant);
  // A platform administrator's request is platform traffic whatever tenant it acts on; otherwise the caller's home tenant decides.
  req.tenantClass = platform ? 1 : tenantClassOf(String(p.tenant));
  await checkTenantExists(deps, tenantId, String(p.tenant));
  await checkTenantServing(deps, { home: String(p.tenant), tenantId, platform, homeRefused: tenantRefused });
  const isMachine = p.sub === p.client_id;
  const ctx: AdminContext = {
    tenantId,
    actor: { type: isMachine ? 'machine' : 'user', id: String(p.sub), displayName: String(p.name ?? (isMachine ? client.name : p.sub)), email: typeof p.email === 'string' ? p.email : null },
    permissions,
    platform,
    token: p,
  };
  await enforcePolicies(deps, req, ctx, permission, client);
  return ctx;
}
