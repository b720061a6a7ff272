import type { Deps } from '../deps.js';
import { Conflict, JobError, NotFound, ValidationError, type Details } from '../errors.js';
import { checkMapping } from '../field-mapping/check-mapping.js';
import type { Mapping } from '../field-mapping/model.js';
import { checkUserCatalog } from '../field-mapping/user-fields.js';
import type { Route } from '../http/types.js';
import { checkImportFile } from '../imports/check-file.js';
import { enqueueUserJob } from '../imports/queue.js';
import { newId } from '../store/ids.js';
import type { UserJobRow } from '../store/user-jobs.js';
import { adminRoute, fetched, found, listed } from './route.js';

const READ = 'admin:users:read';
const WRITE = 'admin:users:write';
const tags = ['user-jobs'];
const jobNotFound = () => new NotFound('job_not_found');

/** A job as the admin API shows it (never the files). */
export function jobView(j: UserJobRow) {
  const n = (v: number | string | null) => (v === null ? null : Number(v));
  return {
    id: j.id, kind: j.kind, status: j.status, processed_rows: j.processed_rows, total_rows: j.total_rows,
    progress: j.total_rows ? Math.min(1, j.processed_rows / j.total_rows) : j.status === 'succeeded' ? 1 : null,
    counts: { created: j.created_count, updated: j.updated_count, unchanged: j.unchanged_count, rejected: j.rejected_count, review: j.review_count },
    error: j.error_code ? { code: j.error_code, message: j.error_message } : null,
    created_by: j.created_by, created_at: Number(j.created_at), started_at: n(j.started_at), finished_at: n(j.finished_at),
    expires_at: n(j.expires_at), downloaded_at: n(j.downloaded_at), download_available: j.has_result && (j.expires_at ?? 0) > Date.now(),
  };
}

function checkJobMapping(m: Mapping): void {
  const details: Details = {};
  for (const [k, v] of Object.entries(checkMapping(m))) details[`mapping.${k}`] = v;
  Object.assign(details, checkUserCatalog(m));
  if (Object.keys(details).length) throw new ValidationError(details);
}

/** The columns the file's header must carry: every required and every mapped one. */
const headerColumns = (m: Mapping): string[] => [...new Set([...(m.requiredColumns ?? []), ...Object.keys(m.columnToPath)])];

/** User import and export jobs (beyond the spec; docs/field-mapping.md). */
export function userJobRoutes(deps: Deps): Route[] {
  const routesOf = (kind: 'import' | 'export') => {
    const base = kind === 'import' ? '/api/admin/user-imports' : '/api/admin/user-exports';
    return [
      adminRoute(deps, {
        method: 'GET', path: base, permission: READ, tags, query: 'query.user-job-list',
        summary: `List user ${kind} jobs, newest first`, response: { 200: 'user-jobs.job-list' },
        handler: listed((store, q) => store.userJobs.list(kind, q), jobView),
      }),
      adminRoute(deps, {
        method: 'GET', path: `${base}/:id`, permission: READ, tags,
        summary: `Get a user ${kind} job with its counts and progress`, response: { 200: 'user-jobs.job' }, errors: [404],
        handler: fetched((store, id) => store.userJobs.get(id, kind), jobView, jobNotFound),
      }),
      adminRoute(deps, {
        method: 'POST', path: `${base}/:id/cancel`, permission: WRITE, tags,
        summary: `Cancel a queued or running ${kind} (an import stops at its next batch; what is committed stays)`,
        response: { 200: 'user-jobs.job' }, errors: [400, 404, 409],
        audit: { action: `user_${kind}.cancel`, resourceType: `user_${kind}` },
        handler: async ({ params, mutate }) => {
          const view = await mutate(async (_tx, store) => {
            const cur = found(await store.userJobs.get(params.id!, kind, { lock: true }), jobNotFound);
            if (cur.status === 'cancelled') throw new JobError('job_cancelled', 'The job is already cancelled.');
            if (cur.status === 'succeeded' || cur.status === 'failed') throw new Conflict('conflict', `The job has already ${cur.status}.`);
            const next = (await store.userJobs.cancel(cur.id))!;
            return { result: jobView(next), before: jobView(cur), after: jobView(next) };
          });
          return { body: view };
        },
      }),
    ];
  };
  const create = adminRoute(deps, {
    method: 'POST', path: '/api/admin/user-imports', permission: WRITE, tags, body: 'user-jobs.import-request',
    summary: 'Start a user import from a CSV and a field mapping (at most 100,000 rows; rows are applied in batches by the jobs worker). The file is checked first: not UTF-8, a malformed header or body 422, over 100,000 rows 413',
    response: { 202: 'user-jobs.job' }, errors: [413, 422, 503],
    audit: { action: 'user_import.create', resourceType: 'user_import' },
    handler: async ({ deps, ctx, req, body, mutate }) => {
      const mapping = body.mapping as Mapping;
      checkJobMapping(mapping);
      // The bytes stored are the bytes checked: one copy of the file besides the request's own.
      const file = Buffer.from(body.csv, 'utf8');
      const rows = await checkImportFile({ csv: body.csv, file, body: req.body, columns: headerColumns(mapping) });
      const id = newId('imp');
      const job = await mutate(async (_tx, store) => {
        const j = await store.userJobs.insert(id, 'import', mapping, ctx.actor.id, file, rows);
        return { result: j, resourceId: id, after: jobView(j), metadata: { bytes: file.length, rows } };
      });
      // Queued after the commit, so the worker finds the job; a failed enqueue leaves it queued for a retry of this call's job id.
      await enqueueUserJob(deps.jobs, { tenantId: ctx.tenantId, jobId: id, kind: 'import' });
      return { status: 202, body: jobView(job) };
    },
  });
  const exportCreate = adminRoute(deps, {
    method: 'POST', path: '/api/admin/user-exports', permission: READ, tags, body: 'user-jobs.export-request',
    summary: 'Start an export of the tenant\'s users to CSV through a field mapping in reverse (downloadable once, for an hour)',
    response: { 202: 'user-jobs.job' }, errors: [503],
    audit: { action: 'user_export.create', resourceType: 'user_export', severity: 'warn' },
    handler: async ({ deps, ctx, body, mutate }) => {
      const mapping = body.mapping as Mapping;
      checkJobMapping(mapping);
      const id = newId('exp');
      const job = await mutate(async (_tx, store) => {
        const j = await store.userJobs.insert(id, 'export', mapping, ctx.actor.id, null);
        return { result: j, resourceId: id, after: jobView(j) };
      });
      await enqueueUserJob(deps.jobs, { tenantId: ctx.tenantId, jobId: id, kind: 'export' });
      return { status: 202, body: jobView(job) };
    },
  });
  return [
    { ...create, bodyLimit: 40 * 1024 * 1024 },
    ...routesOf('import'),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/user-imports/:id/rejections', permission: READ, tags, query: 'query.user-job-rejections',
      summary: 'Rejected rows of an import with their reasons (never their values)', response: { 200: 'user-jobs.rejections' }, errors: [404],
      handler: async ({ params, query, store }) => {
        found(await store.userJobs.get(params.id!, 'import'), jobNotFound);
        return { body: { items: await store.userJobs.rejections(params.id!, query.limit) } };
      },
    }),
    exportCreate,
    ...routesOf('export'),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/user-exports/:id/download', permission: READ, tags,
      summary: 'Download the exported CSV once: the file is removed as it is handed out (409 when already taken or expired)',
      response: { 200: null }, errors: [404, 409, 500],
      audit: { action: 'user_export.download', resourceType: 'user_export', severity: 'warn' },
      handler: async ({ params, mutate }) => {
        const csv = await mutate(async (_tx, store) => {
          const j = found(await store.userJobs.get(params.id!, 'export', { lock: true }), jobNotFound);
          if (j.status === 'failed') throw new JobError('export_failed', 'The export failed; start another.');
          if (j.status !== 'succeeded') throw new Conflict('conflict', `The export is ${j.status}.`);
          const file = await store.userJobs.takeResult(j.id);
          if (!file) throw new Conflict('conflict', 'The export was already downloaded or has expired.');
          return { result: file, metadata: { bytes: file.length, rows: j.total_rows } };
        });
        return { type: 'text/csv; charset=utf-8', headers: { 'Content-Disposition': `attachment; filename="users-${params.id}.csv"`, 'Cache-Control': 'no-store' }, body: csv };
      },
    }),
  ];
}
