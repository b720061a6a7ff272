import type { Reason } from './review-tasks.js';

/** A job's field mapping as stored: validated when the job was created (src/field-mapping/model.ts types it). */
export type StoredMapping = object;
import type { Cursor } from './cursor.js';
import type { Db } from '../sql.js';

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
export type RowOutcome = 'created' | 'updated' | 'unchanged' | 'rejected' | 'review';

export interface UserJobRow {
  tenant_id: string; id: string; kind: 'import' | 'export'; status: JobStatus; mapping: StoredMapping;
  total_rows: number | null; processed_rows: number; created_count: number; updated_count: number; unchanged_count: number;
  rejected_count: number; review_count: number; error_code: string | null; error_message: string | null; created_by: string;
  created_at: number; started_at: number | null; finished_at: number | null; expires_at: number | null; downloaded_at: number | null;
  updated_at: number; has_result: boolean;
}

export interface BatchCounts { created: number; updated: number; unchanged: number; rejected: number; review: number }

// The CSV columns are never selected with the job: they are read on their own, by the worker and the download.
const COLUMNS = (sql: Db) => sql`tenant_id, id, kind, status, mapping, total_rows, processed_rows, created_count, updated_count, unchanged_count,
  rejected_count, review_count, error_code, error_message, created_by, created_at, started_at, finished_at, expires_at, downloaded_at, updated_at,
  result_csv is not null as has_result`;

/** The mapping column is json (key order kept), which the driver hands over as text. */
function parsed<T extends UserJobRow | null | undefined>(row: T): T {
  if (row && typeof row.mapping === 'string') row.mapping = JSON.parse(row.mapping) as StoredMapping;
  return row;
}

/** Import and export jobs of one tenant, with the import's per-row outcomes. */
export class UserJobRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  /** A new queued job; an import's row count is known when its file was checked on the way in. */
  async insert(id: string, kind: 'import' | 'export', mapping: StoredMapping, createdBy: string, sourceCsv: Buffer | null, totalRows: number | null = null): Promise<UserJobRow> {
    const sql = this.db;
    const [row] = await sql<UserJobRow[]>`
      insert into user_jobs (tenant_id, id, kind, mapping, source_csv, created_by, total_rows)
      values (${this.tenantId}, ${id}, ${kind}, ${JSON.stringify(mapping)}::json, ${sourceCsv}, ${createdBy}, ${totalRows}) returning ${COLUMNS(sql)}`;
    return parsed(row!);
  }

  async get(id: string, kind: 'import' | 'export', opts: { lock?: boolean } = {}): Promise<UserJobRow | null> {
    const sql = this.db;
    const [row] = await sql<UserJobRow[]>`select ${COLUMNS(sql)} from user_jobs where tenant_id = ${this.tenantId} and id = ${id} and kind = ${kind} ${opts.lock ? sql`for update` : sql``}`;
    return parsed(row ?? null);
  }

  async list(kind: 'import' | 'export', f: { limit: number; cursor?: Cursor | undefined; status?: string | undefined }): Promise<UserJobRow[]> {
    const sql = this.db;
    return (await sql<UserJobRow[]>`select ${COLUMNS(sql)} from user_jobs where tenant_id = ${this.tenantId} and kind = ${kind}
      ${f.cursor ? sql`and (created_at, id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
      ${f.status ? sql`and status = ${f.status}` : sql``}
      order by created_at desc, id desc limit ${f.limit + 1}`).map(parsed);
  }

  async sourceCsv(id: string): Promise<Buffer | null> {
    const [row] = await this.db<{ source_csv: Buffer | null }[]>`select source_csv from user_jobs where tenant_id = ${this.tenantId} and id = ${id}`;
    return row?.source_csv ?? null;
  }

  /** queued -> running (a resumed job stays running); null when the job is no longer runnable. */
  async start(id: string): Promise<UserJobRow | null> {
    const sql = this.db;
    const [row] = await sql<UserJobRow[]>`update user_jobs set status = 'running', started_at = coalesce(started_at, now_ms()), updated_at = now_ms()
      where tenant_id = ${this.tenantId} and id = ${id} and status in ('queued', 'running') returning ${COLUMNS(sql)}`;
    return parsed(row ?? null);
  }

  async setTotal(id: string, total: number): Promise<void> {
    await this.db`update user_jobs set total_rows = ${total}, updated_at = now_ms() where tenant_id = ${this.tenantId} and id = ${id}`;
  }

  /** Records a committed batch: the checkpoint moves to `processedRows` and the counts grow. False when the job stopped running. */
  async checkpoint(id: string, processedRows: number, c: BatchCounts): Promise<boolean> {
    const r = await this.db`update user_jobs set processed_rows = ${processedRows}, created_count = created_count + ${c.created},
      updated_count = updated_count + ${c.updated}, unchanged_count = unchanged_count + ${c.unchanged}, rejected_count = rejected_count + ${c.rejected},
      review_count = review_count + ${c.review}, updated_at = now_ms()
      where tenant_id = ${this.tenantId} and id = ${id} and status = 'running'`;
    return r.count === 1;
  }

  async finish(id: string, status: 'succeeded' | 'failed', extra: { totalRows?: number; errorCode?: string; errorMessage?: string; resultCsv?: Buffer; expiresAt?: number } = {}): Promise<void> {
    await this.db`update user_jobs set status = ${status}, finished_at = now_ms(), updated_at = now_ms(),
      total_rows = coalesce(${extra.totalRows ?? null}::int, total_rows), error_code = ${extra.errorCode ?? null}, error_message = ${extra.errorMessage ?? null},
      result_csv = ${extra.resultCsv ?? null}, expires_at = ${extra.expiresAt ?? null}, source_csv = null
      where tenant_id = ${this.tenantId} and id = ${id} and status = 'running'`;
  }

  async cancel(id: string): Promise<UserJobRow | null> {
    const sql = this.db;
    const [row] = await sql<UserJobRow[]>`update user_jobs set status = 'cancelled', finished_at = now_ms(), updated_at = now_ms(), source_csv = null
      where tenant_id = ${this.tenantId} and id = ${id} and status in ('queued', 'running') returning ${COLUMNS(sql)}`;
    return parsed(row ?? null);
  }

  async status(id: string): Promise<JobStatus | null> {
    const [row] = await this.db<{ status: JobStatus }[]>`select status from user_jobs where tenant_id = ${this.tenantId} and id = ${id}`;
    return row?.status ?? null;
  }

  /** Takes the export file once: returns it and removes it, or null when it is gone, expired or never made. */
  async takeResult(id: string): Promise<Buffer | null> {
    const [row] = await this.db<{ csv: Buffer }[]>`
      update user_jobs j set result_csv = null, downloaded_at = now_ms(), updated_at = now_ms()
      from (select result_csv as csv from user_jobs where tenant_id = ${this.tenantId} and id = ${id} for update) old
      where j.tenant_id = ${this.tenantId} and j.id = ${id} and j.kind = 'export' and j.result_csv is not null and j.expires_at > now_ms()
      returning old.csv`;
    return row?.csv ?? null;
  }

  /** Row indexes of a batch already recorded (a resumed worker skips them). */
  async doneRows(jobId: string, from: number, to: number): Promise<Set<number>> {
    const rows = await this.db<{ row_index: number }[]>`select row_index from user_import_rows
      where tenant_id = ${this.tenantId} and job_id = ${jobId} and row_index >= ${from} and row_index < ${to}`;
    return new Set(rows.map((r) => r.row_index));
  }

  async recordRows(jobId: string, rows: Array<{ index: number; outcome: RowOutcome; userId: string | null; reasons: Reason[] }>): Promise<void> {
    if (!rows.length) return;
    await this.db`insert into user_import_rows (tenant_id, job_id, row_index, outcome, user_id, reasons)
      select ${this.tenantId}, ${jobId}, i, o, u, r::jsonb from unnest(${rows.map((r) => r.index)}::int[], ${rows.map((r) => r.outcome)}::text[],
        ${rows.map((r) => r.userId) as string[]}::text[], ${rows.map((r) => JSON.stringify(r.reasons))}::text[]) as x(i, o, u, r)
      on conflict do nothing`;
  }

  rejections(jobId: string, limit: number): Promise<Array<{ row_index: number; reasons: Reason[] }>> {
    return this.db<Array<{ row_index: number; reasons: Reason[] }>>`select row_index, reasons from user_import_rows
      where tenant_id = ${this.tenantId} and job_id = ${jobId} and outcome = 'rejected' order by row_index limit ${limit}`;
  }
}
