import { parse } from 'csv-parse';
import { Readable } from 'node:stream';
import { applyMapping, rowStatus } from '../field-mapping/apply.js';
import { applyUserChange } from '../field-mapping/apply-change.js';
import { LIMITS, type Mapping, type Reason, type Row } from '../field-mapping/model.js';
import { compareWithUser, toUserChange } from '../field-mapping/user-fields.js';
import type { Store } from '../store/index.js';
import { lockLiveTenants } from '../store/tenants.js';
import { declareEvents } from '../events/declare.js';
import type { BatchCounts, RowOutcome } from '../store/user-jobs.js';
import { IMPORT_CSV } from './check-file.js';

/** Imported rows are created users. */
const importEvents = declareEvents(['user.created']);

export const IMPORT_BATCH = 500;

export interface ImportResult { status: 'succeeded' | 'failed' | 'cancelled' | 'gone'; processed: number }

/**
 * Runs (or resumes) an import job: streams its CSV through csv-parse, maps each row, and commits each
 * batch in one transaction with its users, their outbox events, review tasks, row outcomes and the
 * checkpoint. Rows below the checkpoint, or already recorded, are skipped, so a killed worker resumes
 * without duplicates. Stops at a batch boundary when the job is cancelled.
 */
export async function runImport(store: Store, tenantId: string, jobId: string, opts: { batchSize?: number; onBatch?: (processed: number) => Promise<void> | void } = {}): Promise<ImportResult> {
  const repo = store.forTenant(tenantId).userJobs;
  const job = await repo.start(jobId);
  if (!job) return { status: ((await repo.status(jobId)) ?? 'gone') as ImportResult['status'], processed: 0 };
  const csv = await repo.sourceCsv(jobId);
  if (!csv) { await repo.finish(jobId, 'failed', { errorCode: 'job_failed', errorMessage: 'the uploaded file is gone' }); return { status: 'failed', processed: job.processed_rows }; }
  const mapping = job.mapping as Mapping;
  const size = opts.batchSize ?? IMPORT_BATCH;
  if (job.total_rows === null) {
    // Jobs created before files were checked on the way in (src/imports/check-file.ts) have no count yet:
    // a first streaming pass counts the records, so progress is known and an oversized file fails before any row is applied.
    let total = 0;
    try {
      for await (const _ of Readable.from(csv).pipe(parse({ ...IMPORT_CSV, from_line: 2 }))) if (++total > LIMITS.importRows) break;
    } catch (err) { return failParse(repo, jobId, err, job.processed_rows); }
    if (total > LIMITS.importRows) {
      await repo.finish(jobId, 'failed', { errorCode: 'import_failed', errorMessage: `the file has more than ${LIMITS.importRows} rows` });
      return { status: 'failed', processed: 0 };
    }
    await repo.setTotal(jobId, total);
  }
  let index = 0;
  let processed = job.processed_rows;
  let batch: Array<{ index: number; row: Row }> = [];
  const parser = Readable.from(csv).pipe(parse({ ...IMPORT_CSV, columns: true }));
  try {
    for await (const record of parser as AsyncIterable<Row>) {
      if (index >= LIMITS.importRows) {
        await repo.finish(jobId, 'failed', { errorCode: 'import_failed', errorMessage: `the file has more than ${LIMITS.importRows} rows` });
        return { status: 'failed', processed };
      }
      if (index >= processed) batch.push({ index, row: record });
      index++;
      if (batch.length >= size) {
        if (!(await commitBatch(store, tenantId, jobId, mapping, batch, index))) return { status: 'cancelled', processed };
        processed = index;
        batch = [];
        await opts.onBatch?.(processed);
      }
    }
  } catch (err) {
    return failParse(repo, jobId, err, processed);
  }
  if (batch.length && !(await commitBatch(store, tenantId, jobId, mapping, batch, index))) return { status: 'cancelled', processed };
  await repo.finish(jobId, 'succeeded', { totalRows: index });
  return { status: 'succeeded', processed: index };
}

/** A malformed file: csv-parse names the line, never the content. */
async function failParse(repo: ReturnType<Store['forTenant']>['userJobs'], jobId: string, err: unknown, processed: number): Promise<ImportResult> {
  const line = (err as { lines?: number }).lines;
  await repo.finish(jobId, 'failed', { errorCode: 'import_failed', errorMessage: `the CSV could not be parsed${line ? ` at line ${line}` : ''} (${(err as { code?: string }).code ?? 'error'})` });
  return { status: 'failed', processed };
}

/** One batch in one transaction; false when the job is no longer running (cancelled, or its tenant tombstoned: nothing is written behind its purge). */
async function commitBatch(store: Store, tenantId: string, jobId: string, m: Mapping, batch: Array<{ index: number; row: Row }>, upTo: number): Promise<boolean> {
  return store.transaction(tenantId, async (s, tx) => {
    if (!(await lockLiveTenants(tx, [tenantId])).size) return false;
    const job = await s.userJobs.get(jobId, 'import', { lock: true });
    if (job?.status !== 'running') return false;
    const done = await s.userJobs.doneRows(jobId, batch[0]!.index, upTo);
    const counts: BatchCounts = { created: 0, updated: 0, unchanged: 0, rejected: 0, review: 0 };
    const mapped = batch.filter((b) => !done.has(b.index)).map((b) => ({ ...b, ...applyMapping(m, b.row) }));
    const known = await s.users.getByEmails(mapped.map((b) => (rowStatus(b.reasons) === 'failed' ? null : toUserChange(m, b.targets)?.email)).filter((e): e is string => !!e));
    const fresh = new Map<string, { index: number; change: NonNullable<ReturnType<typeof toUserChange>> }>();
    const outcomes: Array<{ index: number; outcome: RowOutcome; userId: string | null; reasons: Reason[] }> = [];
    for (const { index, targets, reasons } of mapped) {
      const status = rowStatus(reasons);
      const change = status === 'failed' ? null : toUserChange(m, targets);
      const record = (outcome: RowOutcome, userId: string | null, why: Reason[] = reasons) => { counts[outcome]++; outcomes.push({ index, outcome, userId, reasons: why }); };
      if (!change) { record('rejected', null, reasons.length ? reasons : [{ code: 'required_missing', severity: 'error', targetRef: 'email' }]); continue; }
      const existing = known.get(change.email.toLowerCase()) ?? null;
      const relation = existing ? compareWithUser(existing, change) : 'new';
      if (status === 'partial' || relation === 'conflict') {
        const why = relation === 'conflict' ? [...reasons, { code: 'conflicts_with_existing_user', severity: 'warning' as const, targetRef: 'email' }] : reasons;
        await s.reviewTasks.insert({ taskType: relation === 'conflict' ? 'import_conflict' : 'import_warning', reasons: why, jobId, rowIndex: index, userId: existing?.id ?? null, pendingChange: change });
        record('review', existing?.id ?? null, why);
      } else if (relation === 'same') record('unchanged', existing!.id, []);
      else if (existing) {
        const { user } = await applyUserChange(tx, s, existing.id, change);
        known.set(user.email.toLowerCase(), user);
        record('updated', user.id, []);
      } else if (fresh.has(change.email.toLowerCase())) {
        // The same address twice in one batch: the later row waits for a human.
        const why = [...reasons, { code: 'duplicate_in_file', severity: 'warning' as const, targetRef: 'email' }];
        await s.reviewTasks.insert({ taskType: 'import_conflict', reasons: why, jobId, rowIndex: index, userId: null, pendingChange: change });
        record('review', null, why);
      } else fresh.set(change.email.toLowerCase(), { index, change });
    }
    // New users of the batch in one insert and their events in one statement.
    const inserted = await s.users.insertMany([...fresh.values()].map(({ change: c }) => ({ email: c.email, name: c.name ?? null, emailVerified: c.email_verified ?? false, metadata: c.metadata ?? {} })));
    const byEmail = new Map(inserted.map((u) => [u.email.toLowerCase(), u]));
    for (const [email, { index }] of fresh) {
      const u = byEmail.get(email);
      counts[u ? 'created' : 'rejected']++;
      outcomes.push({ index, outcome: u ? 'created' : 'rejected', userId: u?.id ?? null, reasons: u ? [] : [{ code: 'email_already_exists', severity: 'error', targetRef: 'email' }] });
    }
    await importEvents.emitAll(tx, tenantId, inserted.map((u) => ({ event: 'user.created' as const, data: { user_id: u.id, email: u.email } })));
    outcomes.sort((a, b) => a.index - b.index);
    await s.userJobs.recordRows(jobId, outcomes);
    await s.userJobs.checkpoint(jobId, upTo, counts);
    return true;
  });
}
