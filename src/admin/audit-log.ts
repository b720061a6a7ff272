import type { Deps } from '../deps.js';
import { NotFound } from '../errors.js';
import type { Route } from '../http/types.js';
import { AUDIT_SENSITIVE, auditView, getAuditEntry, listAuditEntries, type AuditFilter } from './audit.js';
import { adminContext, hasPermission } from './context.js';
import { decodeCursor, page } from './pagination.js';

const READ = 'admin:audit-log:read';
const tags = ['admin-audit-log'];

/** GET /api/admin/admin-audit-log/{id} and the filtered, cursor-paginated list. */
export function auditLogRoutes(deps: Deps): Route[] {
  return [
    {
      method: 'GET', path: '/api/admin/admin-audit-log', iface: 'admin', querySchema: 'admin-audit-log-list-query',
      doc: { summary: `List audit entries, newest first (before/after only with ${AUDIT_SENSITIVE})`, tags, permission: READ, responses: { 200: 'admin-audit-log-list' }, errors: [401, 403, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const q = req.queryData as Omit<AuditFilter, 'cursor'> & { cursor?: string };
        const rows = await listAuditEntries(deps.sql, ctx.tenantId, { ...q, cursor: decodeCursor(q.cursor) });
        const p = page(rows, q.limit);
        const sensitive = hasPermission(ctx.permissions, AUDIT_SENSITIVE);
        return { body: { items: p.items.map((r) => auditView(r, sensitive)), cursor: p.next } };
      },
    },
    {
      method: 'GET', path: '/api/admin/admin-audit-log/:id', iface: 'admin',
      doc: { summary: `Get an audit entry (before/after only with ${AUDIT_SENSITIVE})`, tags, permission: READ, responses: { 200: 'admin-audit-log-entry' }, errors: [401, 403, 404], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const row = await getAuditEntry(deps.sql, ctx.tenantId, req.params.id!);
        if (!row) throw new NotFound('not_found', 'No such audit entry.');
        return { body: auditView(row, hasPermission(ctx.permissions, AUDIT_SENSITIVE)) };
      },
    },
  ];
}
