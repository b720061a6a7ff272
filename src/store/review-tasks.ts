/** Why a row or task needs attention, as stored (src/field-mapping/model.ts builds them). */
export interface Reason { code: string; severity: 'error' | 'warning'; targetRef: string }
/** Review task statuses; the moves between them are src/field-mapping/review-states.ts. */
export const REVIEW_STATUSES = ['open', 'in_review', 'approved', 'rejected', 'resolved', 'dismissed'] as const;
export type ReviewStatus = (typeof REVIEW_STATUSES)[number];
import type { Cursor } from './cursor.js';
import { newId } from './ids.js';
import type { Db } from '../sql.js';
import { openFields, sealFields } from '../sealed-fields.js';

export type ReviewTaskType = 'import_warning' | 'import_conflict';

/** The change a task applies when approved: the mapped user fields, and the user it updates (null: a new user). */
export interface PendingChange { email: string; name?: string | null; email_verified?: boolean; metadata?: Record<string, unknown> }

export interface ReviewTaskRow {
  tenant_id: string; id: string; task_type: ReviewTaskType; status: ReviewStatus; assigned_to: string | null;
  reason_codes: string[]; reasons: Reason[]; job_id: string | null; row_index: number | null; user_id: string | null;
  pending_change: PendingChange | null; created_at: number; updated_at: number;
}

export interface NewReviewTask {
  taskType: ReviewTaskType; reasons: Reason[]; jobId?: string | null; rowIndex?: number | null;
  userId?: string | null; pendingChange?: PendingChange | null;
}

export interface ReviewTaskFilter { limit: number; cursor?: Cursor | undefined; status?: string | undefined; task_type?: string | undefined; assigned_to?: string | undefined; job_id?: string | undefined }

/** Review tasks of one tenant, with the Idempotency-Keys of their transitions. */
export class ReviewTaskRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  /** The pending change's addresses are sealed at rest (src/sealed-fields.ts): a row as callers see it. */
  private opened(row: ReviewTaskRow | undefined): ReviewTaskRow | null {
    return row ? { ...row, pending_change: row.pending_change ? openFields(this.tenantId, row.pending_change) : null } : null;
  }

  /** Creates a task; an import row that already has one (a resumed worker) gets null. */
  async insert(t: NewReviewTask): Promise<ReviewTaskRow | null> {
    const sql = this.db;
    const [row] = await sql<ReviewTaskRow[]>`
      insert into review_tasks (tenant_id, id, task_type, reason_codes, reasons, job_id, row_index, user_id, pending_change)
      values (${this.tenantId}, ${newId('rvt')}, ${t.taskType}, ${[...new Set(t.reasons.map((r) => r.code))]}, ${sql.json(t.reasons as never)},
        ${t.jobId ?? null}, ${t.rowIndex ?? null}, ${t.userId ?? null}, ${t.pendingChange ? sql.json(sealFields(this.tenantId, t.pendingChange) as never) : null})
      on conflict do nothing returning *`;
    return this.opened(row);
  }

  async get(id: string, opts: { lock?: boolean } = {}): Promise<ReviewTaskRow | null> {
    const sql = this.db;
    const [row] = await sql<ReviewTaskRow[]>`select * from review_tasks where tenant_id = ${this.tenantId} and id = ${id} ${opts.lock ? sql`for update` : sql``}`;
    return this.opened(row);
  }

  /** Newest first; limit+1 rows (see `page`). */
  async list(f: ReviewTaskFilter): Promise<ReviewTaskRow[]> {
    const sql = this.db;
    const rows = await sql<ReviewTaskRow[]>`
      select * from review_tasks where tenant_id = ${this.tenantId}
        ${f.cursor ? sql`and (created_at, id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
        ${f.status ? sql`and status = ${f.status}` : sql``}
        ${f.task_type ? sql`and task_type = ${f.task_type}` : sql``}
        ${f.assigned_to ? sql`and assigned_to = ${f.assigned_to}` : sql``}
        ${f.job_id ? sql`and job_id = ${f.job_id}` : sql``}
      order by created_at desc, id desc limit ${f.limit + 1}`;
    return rows.map((r) => this.opened(r)!);
  }

  /** Sets status and assignee (undefined keeps it); `clearChange` drops the pending change. */
  async transition(id: string, status: ReviewStatus, assignedTo: string | null | undefined, reasonCodes: string[] | undefined, clearChange: boolean): Promise<ReviewTaskRow | null> {
    const sql = this.db;
    const [row] = await sql<ReviewTaskRow[]>`
      update review_tasks set status = ${status},
        assigned_to = ${assignedTo === undefined ? sql`assigned_to` : assignedTo},
        reason_codes = ${reasonCodes === undefined ? sql`reason_codes` : sql`${reasonCodes}::text[]`},
        pending_change = ${clearChange ? null : sql`pending_change`},
        updated_at = now_ms()
      where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return this.opened(row);
  }

  /** The first answer stored under an Idempotency-Key of a task, with its body fingerprint. */
  async idempotent(taskId: string, key: string): Promise<{ body_hash: string; result: unknown } | null> {
    const [row] = await this.db<{ body_hash: string; result: unknown }[]>`
      select body_hash, result from review_task_idempotency where tenant_id = ${this.tenantId} and task_id = ${taskId} and key = ${key}`;
    return row ?? null;
  }

  /** Stores the first answer under a key; false when another request stored one first. */
  async rememberKey(taskId: string, key: string, bodyHash: string, result: unknown): Promise<boolean> {
    const sql = this.db;
    const r = await sql`insert into review_task_idempotency (tenant_id, task_id, key, body_hash, result)
      values (${this.tenantId}, ${taskId}, ${key}, ${bodyHash}, ${sql.json(result as never)}) on conflict do nothing`;
    return r.count === 1;
  }

  count(jobId: string): Promise<number> {
    return this.db<{ n: number }[]>`select count(*)::int as n from review_tasks where tenant_id = ${this.tenantId} and job_id = ${jobId}`.then((r) => r[0]!.n);
  }
}
