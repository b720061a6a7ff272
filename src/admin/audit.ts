import type { AuditRow } from '../store/audit-log.js';
import { openFields, openValue } from '../sealed-fields.js';

export type { AuditResult, AuditSeverity, AuditInput, AuditRow } from '../store/audit-log.js';

/** The permission that reveals `before`/`after` of audit entries (reading entries needs admin:audit-log:read). */
export const AUDIT_SENSITIVE = 'admin:audit-log:read-sensitive';

/** The spec's audit entry; before/after only for callers allowed to see them. */
export function auditView(sealed: AuditRow, sensitive: boolean): Record<string, unknown> {
  const r = { ...sealed, admin_email: openValue(sealed.tenant_id, sealed.admin_email), metadata: openFields(sealed.tenant_id, sealed.metadata),
    admin_user_name: sealed.admin_user_name === null ? null : openValue(sealed.tenant_id, sealed.admin_user_name),
    actor_display_name: openValue(sealed.tenant_id, sealed.actor_display_name),
    before: openFields(sealed.tenant_id, sealed.before), after: openFields(sealed.tenant_id, sealed.after) };
  const out: Record<string, unknown> = {
    id: r.id, tenant_id: r.tenant_id, admin_user_id: r.admin_user_id, admin_email: r.admin_email, admin_user_name: r.admin_user_name,
    actor_type: r.actor_type, actor_id: r.actor_id, actor_display_name: r.actor_display_name, action: r.action,
    resource_type: r.resource_type, resource_id: r.resource_id, result: r.result, severity: r.severity, metadata: r.metadata,
    created_at: Number(r.created_at), admin_user: { id: r.admin_user_id, email: r.admin_email, name: r.admin_user_name },
  };
  if (sensitive) { out.before = r.before; out.after = r.after; }
  return out;
}
