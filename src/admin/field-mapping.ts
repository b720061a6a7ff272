import type { Deps } from '../deps.js';
import { ValidationError } from '../errors.js';
import { checkMapping, depthOf } from '../field-mapping/check-mapping.js';
import { LIMITS, type Mapping } from '../field-mapping/model.js';
import { previewCsv } from '../field-mapping/preview.js';
import type { Route } from '../http/types.js';
import { adminRoute } from './route.js';

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
  return [{ ...preview, bodyLimit: 2 * LIMITS.previewBodyBytes }];
}
