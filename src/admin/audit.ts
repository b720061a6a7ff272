import type { Sql, TxSql } from '../store/sql.js';
import type { AdminContext } from './context.js';
import { newId, type Cursor } from './pagination.js';

type Db = Sql | TxSql;

export type AuditResult = 'success' | 'failure';
export type AuditSeverity = 'debug' | 'info' | 'warn' | 'error' | 'critical';

/** The permission that reveals `before`/`after` of audit entries (reading entries needs admin:audit-log:read). */
export const AUDIT_SENSITIVE = 'admin:audit-log:read-sensitive';

export interface AuditInput {
  action: string;
  resourceType: string;
  resourceId?: string | null;
  result?: AuditResult;
  severity?: AuditSeverity;
  metadata?: Record<string, unknown>;
  before?: unknown;
  after?: unknown;
}

export interface AuditRow {
  tenant_id: string; id: string; admin_user_id: string; admin_email: string; admin_user_name: string | null;
  actor_type: 'user' | 'machine'; actor_id: string; actor_display_name: string; action: string; resource_type: string;
  resource_id: string; result: AuditResult; severity: AuditSeverity; metadata: Record<string, unknown>;
  before: Record<string, unknown> | null; after: Record<string, unknown> | null; created_at: number;
}

/**
 * Writes one audit entry. Pass the transaction of the change so the entry exists if and only if the
 * change committed; failures are written on their own after the change rolled back.
 */
export async function recordAudit(tx: Db, ctx: Pick<AdminContext, 'tenantId' | 'actor'>, e: AuditInput): Promise<string> {
  const id = newId('aud');
  const json = (v: unknown) => (v === undefined || v === null ? null : tx.json(JSON.parse(JSON.stringify(v)) as never));
  await tx`
    insert into admin_audit_log (tenant_id, id, admin_user_id, admin_email, admin_user_name, actor_type, actor_id, actor_display_name,
      action, resource_type, resource_id, result, severity, metadata, before, after)
    values (${ctx.tenantId}, ${id}, ${ctx.actor.id}, ${ctx.actor.email ?? ''}, ${ctx.actor.type === 'user' ? ctx.actor.displayName : null},
      ${ctx.actor.type}, ${ctx.actor.id}, ${ctx.actor.displayName}, ${e.action}, ${e.resourceType}, ${e.resourceId ?? ''},
      ${e.result ?? 'success'}, ${e.severity ?? (e.result === 'failure' ? 'warn' : 'info')}, ${tx.json((e.metadata ?? {}) as never)},
      ${json(e.before)}, ${json(e.after)})`;
  return id;
}

export async function getAuditEntry(sql: Db, tenantId: string, id: string): Promise<AuditRow | null> {
  const [row] = await sql<AuditRow[]>`select * from admin_audit_log where tenant_id = ${tenantId} and id = ${id}`;
  return row ?? null;
}

export interface AuditFilter {
  limit: number; cursor?: Cursor | undefined; action?: string | undefined; resource_type?: string | undefined; resource_id?: string | undefined;
  actor_id?: string | undefined; result?: AuditResult | undefined; severity?: AuditSeverity | undefined; since?: number | undefined; until?: number | undefined;
}

/** Newest first, keyset-paginated; returns limit+1 rows so the caller knows whether there is more. */
export async function listAuditEntries(sql: Db, tenantId: string, f: AuditFilter): Promise<AuditRow[]> {
  return sql<AuditRow[]>`
    select * from admin_audit_log where tenant_id = ${tenantId}
      ${f.cursor ? sql`and (created_at, id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
      ${f.action ? sql`and action = ${f.action}` : sql``}
      ${f.resource_type ? sql`and resource_type = ${f.resource_type}` : sql``}
      ${f.resource_id ? sql`and resource_id = ${f.resource_id}` : sql``}
      ${f.actor_id ? sql`and actor_id = ${f.actor_id}` : sql``}
      ${f.result ? sql`and result = ${f.result}` : sql``}
      ${f.severity ? sql`and severity = ${f.severity}` : sql``}
      ${f.since !== undefined ? sql`and created_at >= ${f.since}` : sql``}
      ${f.until !== undefined ? sql`and created_at < ${f.until}` : sql``}
    order by created_at desc, id desc limit ${f.limit + 1}`;
}

/** The spec's audit entry; before/after only for callers allowed to see them. */
export function auditView(r: AuditRow, sensitive: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: r.id, tenant_id: r.tenant_id, admin_user_id: r.admin_user_id, admin_email: r.admin_email, admin_user_name: r.admin_user_name,
    actor_type: r.actor_type, actor_id: r.actor_id, actor_display_name: r.actor_display_name, action: r.action,
    resource_type: r.resource_type, resource_id: r.resource_id, result: r.result, severity: r.severity, metadata: r.metadata,
    created_at: Number(r.created_at), admin_user: { id: r.admin_user_id, email: r.admin_email, name: r.admin_user_name },
  };
  if (sensitive) { out.before = r.before; out.after = r.after; }
  return out;
}
