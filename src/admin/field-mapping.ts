import type { Deps } from '../deps.js';
import { ValidationError } from '../errors.js';
import { checkMapping, depthOf } from '../field-mapping/check-mapping.js';
import { LIMITS, type Mapping } from '../field-mapping/model.js';
import { previewCsv } from '../field-mapping/preview.js';
import { reviewTaskNotFound, reviewTaskView, bodyHash, transitionReviewTask, type TransitionResult } from '../field-mapping/review-transition.js';
import type { Route } from '../http/types.js';
import { Conflict } from '../errors.js';
import { adminRoute, fetched, listed } from './route.js';

const READ = 'admin:field-mapping:read';
const WRITE = 'admin:field-mapping:write';
const tags = ['field-mapping'];

/** Size and depth limits a schema cannot state, then the mapping's own references; 422 naming the path. */
export function checkMappingRequest(raw: Buffer, body: Mapping & { rows?: unknown }, maxBytes: number): void {
  if (raw.length > maxBytes) throw new ValidationError({ body: [`must be at most ${maxBytes} bytes`] });
  if (depthOf(body, LIMITS.depth + 1) > LIMITS.depth) throw new ValidationError({ body: [`must nest at most ${LIMITS.depth} levels`] });
  const details = checkMapping(body);
  if (Object.keys(details).length) throw new ValidationError(details);
}

/** The CSV mapping dry run (spec: POST /api/admin/field-mapping/preview/csv). */
export function fieldMappingRoutes(deps: Deps): Route[] {
  const preview = adminRoute(deps, {
    method: 'POST', path: '/api/admin/field-mapping/preview/csv', permission: WRITE, tags, body: 'field-mapping.preview-request',
    summary: 'Dry run of a CSV field mapping over at most 100 rows: per-row outcome, reasons and which targets would be set (never the values); nothing is stored',
    response: { 200: 'field-mapping.preview' },
    audit: { action: 'field_mapping.preview', resourceType: 'field_mapping' },
    handler: async ({ req, body, unchanged }) => {
      checkMappingRequest(req.body, body as Mapping, LIMITS.previewBodyBytes);
      // A dry run changes nothing, so it owes no audit entry (an entry would itself be a stored row).
      unchanged();
      const { protocol, persisted, maxRows, ...rest } = previewCsv(body as Mapping, body.rows);
      return { body: { preview: { protocol, persisted, maxRows }, ...rest } };
    },
  });
  // The byte limit is answered as the spec's 422 naming the body, so the transport lets a little more through.
  return [{ ...preview, bodyLimit: 2 * LIMITS.previewBodyBytes }, ...reviewTaskRoutes(deps)];
}

/** Review tasks of doubtful import rows: list, get, and the spec's transition (docs/field-mapping.md has the graph). */
function reviewTaskRoutes(deps: Deps): Route[] {
  return [
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/field-mapping/review-tasks', permission: READ, tags, query: 'query.review-task-list',
      summary: 'List review tasks, newest first (filters: status, task_type, assigned_to, job_id)', response: { 200: 'field-mapping.review-task-list' },
      handler: listed((store, q) => store.reviewTasks.list(q), reviewTaskView),
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/field-mapping/review-tasks/:reviewTaskId', permission: READ, tags,
      summary: 'Get a review task', response: { 200: 'field-mapping.review-task' }, errors: [404],
      handler: fetched((store, id) => store.reviewTasks.get(id), reviewTaskView, reviewTaskNotFound, 'reviewTaskId'),
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/field-mapping/review-tasks/:reviewTaskId/transition', permission: WRITE, tags,
      body: 'field-mapping.review-transition-request',
      summary: 'Move a review task to a new status (approved applies its pending change, rejected discards it); honours Idempotency-Key',
      response: { 200: 'field-mapping.review-transition' }, errors: [404, 409],
      audit: { action: 'review_task.transition', resourceType: 'review_task', resourceParam: 'reviewTaskId' },
      handler: async ({ req, body, params, store, mutate, unchanged }) => {
        const id = params.reviewTaskId!;
        const key = req.headers['idempotency-key'];
        if (key !== undefined && (key.length === 0 || key.length > 255)) throw new ValidationError({ 'Idempotency-Key': ['must be 1 to 255 characters'] });
        const hash = bodyHash(body);
        const replay = async (): Promise<TransitionResult | null> => {
          if (key === undefined) return null;
          const prior = await store.reviewTasks.idempotent(id, key);
          if (!prior) return null;
          if (prior.body_hash !== hash) throw new Conflict('conflict', 'This Idempotency-Key was used with another request body.');
          return { ...(prior.result as TransitionResult), idempotent: true };
        };
        const first = await replay();
        if (first) { unchanged(); return { body: { result: first } }; }
        const result = await mutate(async (_tx, s) => {
          const out = await transitionReviewTask(_tx, s, id, body);
          // A concurrent request with the same key that committed first wins; this one rolls back.
          if (key !== undefined && !(await s.reviewTasks.rememberKey(id, key, hash, out.result))) throw new Conflict('conflict', 'A request with this Idempotency-Key was answered first; repeat it to read the answer.');
          return {
            result: out.result, resourceId: id, before: reviewTaskView(out.before), after: reviewTaskView(out.after),
            metadata: { idempotent: out.result.idempotent, ...(out.userId ? { user_id: out.userId } : {}) },
          };
        });
        return { body: { result } };
      },
    }),
  ];
}
