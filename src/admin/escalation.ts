import { Forbidden } from '../errors.js';
import { hasPermission } from '../admin-access.js';
import type { AdminContext } from './types.js';

/** Permission strings: colon-separated segments; `*` is a wildcard segment (see hasPermission). */
export const PERMISSION_PATTERN = '^[A-Za-z0-9_.*-]{1,64}(:[A-Za-z0-9_.*-]{1,64}){0,5}$';

/**
 * No one hands out administration rights they do not hold: every granted permission that reaches the
 * admin namespace (admin:..., or a wildcard that covers it) must be covered by the caller's own.
 */
export function assertGrantable(ctx: AdminContext, permissions: string[]): void {
  for (const p of permissions) {
    const first = p.split(':')[0];
    if ((first === 'admin' || first === '*') && !hasPermission(ctx.permissions, p)) {
      throw new Forbidden('forbidden', `You cannot grant ${p}, which you do not hold yourself.`);
    }
  }
}

/** Tenant scopes for a machine principal: tenant-scoped admins may only grant their own tenant. */
export function assertScopesGrantable(ctx: AdminContext, scopes: Array<{ scope_mode: string; tenant_id: string | null }>): void {
  if (ctx.platform) return;
  for (const s of scopes) {
    if (s.scope_mode === 'all' || (s.scope_mode === 'allow' && s.tenant_id !== ctx.tenantId)) {
      throw new Forbidden('forbidden', 'Only platform administrators may grant access to other tenants.');
    }
  }
}
