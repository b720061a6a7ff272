import { Forbidden } from '../../errors.js';
import type { JwtPayload } from '../../tokens/jwt.js';
import { ADMIN_SCOPE, hasPermission } from '../../admin-access.js';

/** Step 5: the `admin` scope (403 insufficient_scope) and the route's permission (403 forbidden). */
export function checkPermission(p: JwtPayload, permission: string): ReadonlySet<string> {
  if (!String(p.scope ?? '').split(' ').includes(ADMIN_SCOPE)) throw new Forbidden('insufficient_scope', `The access token lacks the "${ADMIN_SCOPE}" scope.`);
  const permissions = new Set<string>(Array.isArray(p.permissions) ? p.permissions.map(String) : []);
  if (!hasPermission(permissions, permission)) throw new Forbidden('forbidden', `This requires the ${permission} permission.`);
  return permissions;
}
