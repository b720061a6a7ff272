import type { Cursor } from './cursor.js';
import { newId } from './ids.js';
import { insertLogRecords } from './log-archive.js';
import type { Db } from '../sql.js';
import { sealFields, sealValue } from '../sealed-fields.js';

export type AuditResult = 'success' | 'failure';
export type AuditSeverity = 'debug' | 'info' | 'warn' | 'error' | 'critical';

/** Who acted: the admin context's actor, or a system actor for background work. */
export interface AuditActor { type: 'user' | 'machine'; id: string; displayName: string; email: string | null }

export interface AuditInput {
  /** A caller-chosen id (from newId('aud')), when the caller must name the entry in its answer. */
  id?: string;
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

export interface AuditFilter {
  limit: number; cursor?: Cursor | undefined; action?: string | undefined; resource_type?: string | undefined; resource_id?: string | undefined;
  actor_id?: string | undefined; result?: AuditResult | undefined; severity?: AuditSeverity | undefined; since?: number | undefined; until?: number | undefined;
}

/** The admin audit log of one tenant. */
export class AuditLogRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  /**
   * Writes one entry. Built on the transaction of the change, the entry exists if and only if the change
   * committed; failures are written on their own after the change rolled back.
   */
  async record(actor: AuditActor, e: AuditInput): Promise<string> {
    const db = this.db;
    const id = e.id ?? newId('aud');
    // Personal data is sealed at rest (the actor's address and name; a user's address, name and metadata
    // in before/after, also in the log record); auditView opens it.
    const seal = <T>(v: T): T => sealFields(this.tenantId, v);
    const actorName = actor.type === 'user' ? sealValue(this.tenantId, actor.displayName) : actor.displayName;
    const json = (v: unknown) => (v === undefined || v === null ? null : db.json(seal(JSON.parse(JSON.stringify(v))) as never));
    await db`
      insert into admin_audit_log (tenant_id, id, admin_user_id, admin_email, admin_user_name, actor_type, actor_id, actor_display_name,
        action, resource_type, resource_id, result, severity, metadata, before, after)
      values (${this.tenantId}, ${id}, ${actor.id}, ${actor.email ? sealValue(this.tenantId, actor.email) : ''}, ${actor.type === 'user' ? actorName : null},
        ${actor.type}, ${actor.id}, ${actorName}, ${e.action}, ${e.resourceType}, ${e.resourceId ?? ''},
        ${e.result ?? 'success'}, ${e.severity ?? (e.result === 'failure' ? 'warn' : 'info')}, ${db.json(seal(e.metadata ?? {}) as never)},
        ${json(e.before)}, ${json(e.after)})`;
    // The entry as a critical log record, in the same transaction: archived if and only if it committed.
    await insertLogRecords(db, [{
      tenantId: this.tenantId, logType: 'admin_audit', plane: 'control', lane: 'critical', ts: Date.now(),
      body: { id, actor_type: actor.type, actor_id: actor.id, action: e.action, resource_type: e.resourceType, resource_id: e.resourceId ?? '',
        result: e.result ?? 'success', severity: e.severity ?? (e.result === 'failure' ? 'warn' : 'info'), metadata: seal(e.metadata ?? {}),
        before: seal(e.before ?? null), after: seal(e.after ?? null) },
    }], false);
    return id;
  }

  async get(id: string): Promise<AuditRow | null> {
    const [row] = await this.db<AuditRow[]>`select * from admin_audit_log where tenant_id = ${this.tenantId} and id = ${id}`;
    return row ?? null;
  }

  /** Newest first, keyset-paginated; returns limit+1 rows so the caller knows whether there is more. */
  list(f: AuditFilter): Promise<AuditRow[]> {
    const sql = this.db;
    return sql<AuditRow[]>`
      select * from admin_audit_log where tenant_id = ${this.tenantId}
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
}
