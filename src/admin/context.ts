import type { Deps } from '../deps.js';
import { Forbidden, Unauthorized } from '../errors.js';
import type { HttpRequest } from '../http/request.js';
import { JwtError, type JwtPayload } from '../tokens/jwt.js';
import { enforcePolicies } from './policy-engine.js';

/** The audience of tokens accepted by the administration interface. */
export const adminAudience = (issuer: string) => `${issuer}/api/admin`;
/** Scope an access token must carry to be used on /api/admin (absent: 403 insufficient_scope). */
export const ADMIN_SCOPE = 'admin';

export interface AdminContext {
  /** The tenant every query of this request is scoped to. */
  tenantId: string;
  actor: { type: 'user' | 'machine'; id: string; displayName: string; email: string | null };
  permissions: ReadonlySet<string>;
  /** May act on any tenant (tenant scope `all`). */
  platform: boolean;
  token: JwtPayload;
}

type TenantScope = { scope_mode: 'none' | 'all' | 'allow'; tenant_id: string | null };

/** True when a granted permission covers `admin:<resource>:<action>`; `*` matches one segment, or all the rest when last. */
export function hasPermission(granted: Iterable<string>, needed: string): boolean {
  const want = needed.split(':');
  for (const g of granted) if (covers(g.split(':'), want)) return true;
  return false;
}

function covers(have: string[], want: string[]): boolean {
  for (let i = 0; i < have.length; i++) {
    if (have[i] === '*' && i === have.length - 1) return true;
    if (i >= want.length || (have[i] !== '*' && have[i] !== want[i])) return false;
  }
  return have.length === want.length;
}

/**
 * Authenticates an admin request and resolves its tenant. Bearer access token of this server with the
 * admin audience and scope; expired 401 token_expired; revoked 401 token_revoked; missing permission
 * 403 forbidden. Platform admins choose the tenant with X-Tenant-Id (or the endpoint's tenant filter);
 * tenant-scoped admins are held to their tenant, and naming another is 403, never data. Finally the
 * target tenant's enabled admin policies are applied (see policy-engine.ts).
 */
export async function adminContext(deps: Deps, req: HttpRequest, permission: string, requestedTenant?: string): Promise<AdminContext> {
  const auth = req.headers.authorization;
  if (!auth || !auth.startsWith('Bearer ') || auth.length < 10) throw new Unauthorized('unauthorized', 'A Bearer access token is required.');
  let p: JwtPayload;
  try {
    p = deps.tokens.accessTokens.verify(auth.slice(7).trim());
  } catch (err) {
    if (err instanceof JwtError && err.reason === 'expired') throw new Unauthorized('token_expired', 'The access token has expired.');
    throw new Unauthorized('unauthorized', 'The access token is not valid.');
  }
  const aud = Array.isArray(p.aud) ? p.aud : [p.aud];
  if (!aud.includes(adminAudience(deps.config.issuer))) throw new Unauthorized('unauthorized', 'The access token is not meant for the administration interface.');
  // The client is checked first: disabling a client also revokes its tokens, and the caller should
  // learn the cause (client_disabled) rather than the consequence (token_revoked).
  const client = await deps.tokens.clients.get(String(p.client_id));
  if (!client || client.status !== 'active') throw new Forbidden('client_disabled', 'The client this token was issued to is disabled.');
  if (await deps.tokens.revocations.isRevoked({ jti: String(p.jti), tenant: String(p.tenant), sub: p.sub, client_id: p.client_id, iat: p.iat })) {
    throw new Unauthorized('token_revoked', 'The access token has been revoked.');
  }
  if (!String(p.scope ?? '').split(' ').includes(ADMIN_SCOPE)) throw new Forbidden('insufficient_scope', `The access token lacks the "${ADMIN_SCOPE}" scope.`);
  const permissions = new Set<string>(Array.isArray(p.permissions) ? p.permissions.map(String) : []);
  if (!hasPermission(permissions, permission)) throw new Forbidden('forbidden', `This requires the ${permission} permission.`);

  const scopes = (Array.isArray(p.tenant_scopes) ? p.tenant_scopes : []) as TenantScope[];
  const platform = scopes.some((s) => s.scope_mode === 'all');
  const allowed = new Set(scopes.filter((s) => s.scope_mode === 'allow' && s.tenant_id).map((s) => s.tenant_id!));
  const home = String(p.tenant);
  const wanted = requestedTenant ?? req.headers['x-tenant-id'] ?? home;
  if (wanted !== home && !platform && !allowed.has(wanted)) throw new Forbidden('forbidden', 'You may not act on that tenant.');
  const isMachine = p.sub === p.client_id;
  const ctx: AdminContext = {
    tenantId: wanted,
    actor: { type: isMachine ? 'machine' : 'user', id: String(p.sub), displayName: String(p.name ?? (isMachine ? client.name : p.sub)), email: typeof p.email === 'string' ? p.email : null },
    permissions,
    platform,
    token: p,
  };
  // Admin policies of the target tenant are evaluated after permissions (403 forbidden on deny).
  await enforcePolicies(deps, req, ctx, permission, client);
  return ctx;
}
