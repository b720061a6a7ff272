/**
 * Who may use the administration interface: its token audience and scope, tenant scopes, and the
 * permission grammar. Shared by the admin routes, the check API, machine principals and the login flow.
 */

/** The audience of tokens accepted by the administration interface. */
export const adminAudience = (issuer: string) => `${issuer}/api/admin`;

/** Scope an access token must carry to be used on /api/admin. */
export const ADMIN_SCOPE = 'admin';

/** Which tenants an admin token may act on (spec: tenant_scopes). */
export interface TenantScope { scope_mode: 'none' | 'all' | 'allow'; tenant_id: string | null }

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
