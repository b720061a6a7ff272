import type { Deps } from '../deps.js';
import { NotFound } from '../errors.js';
import type { Route } from '../http/types.js';
import { decodeCursor, page } from '../store/cursor.js';
import { AUDIT_SENSITIVE, auditView } from './audit.js';
import { hasPermission } from '../admin-access.js';
import { adminRoute } from './route.js';

const READ = 'admin:audit-log:read';
const tags = ['admin-audit-log'];

/** GET /api/admin/admin-audit-log/{id} and the filtered, cursor-paginated list. */
export function auditLogRoutes(deps: Deps): Route[] {
  return [
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/admin-audit-log', permission: READ, tags, query: 'query.admin-audit-log-list',
      summary: `List audit entries, newest first (before/after only with ${AUDIT_SENSITIVE})`, response: { 200: 'admin.audit-log-list' },
      handler: async ({ ctx, query, store }) => {
        const p = page(await store.auditLog.list({ ...query, cursor: decodeCursor(query.cursor) }), query.limit);
        const sensitive = hasPermission(ctx.permissions, AUDIT_SENSITIVE);
        return { body: { items: p.items.map((r) => auditView(r, sensitive)), cursor: p.next } };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/admin-audit-log/:id', permission: READ, tags,
      summary: `Get an audit entry (before/after only with ${AUDIT_SENSITIVE})`, response: { 200: 'admin.audit-log-entry' }, errors: [404],
      handler: async ({ ctx, params, store }) => {
        const row = await store.auditLog.get(params.id!);
        if (!row) throw new NotFound('not_found', 'No such audit entry.');
        return { body: auditView(row, hasPermission(ctx.permissions, AUDIT_SENSITIVE)) };
      },
    }),
  ];
}
