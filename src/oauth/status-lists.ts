import type { Deps } from '../deps.js';
import { NotFound } from '../errors.js';
import type { Route } from '../http/types.js';
import { depsFor } from '../request-deps.js';
import { LIST_TTL_SECONDS } from '../tokens/status-list.js';

/**
 * GET /statuslists/{tenant}/{list}: a tenant's signed token status list (draft-ietf-oauth-status-list,
 * `application/statuslist+jwt`), rebuilt at most every 500 ms; public, as the JWKS that verifies it.
 */
export function statusListRoutes(deps: Deps): Route[] {
  return [{
    method: 'GET', path: '/statuslists/:tenant/:list', iface: 'public',
    doc: { summary: 'Token status list (draft-ietf-oauth-status-list): one bit per access token of the tenant, set when revoked', tags: ['oauth'], security: 'none', responses: { 200: null }, errors: [404] },
    handler: async (req) => {
      const tenant = req.params.tenant!;
      const list = Number(req.params.list);
      const lists = deps.tokens.statusLists;
      if (!Number.isSafeInteger(list) || list < 0 || !(await lists.enabled(tenant))) throw new NotFound('not_found', 'No such status list.');
      // A sampled request's trace: a list built for it is read and signed under its server span.
      const token = await lists.token(tenant, list, depsFor(deps, req).trace);
      if (!token) throw new NotFound('not_found', 'No such status list.');
      return { type: 'application/statuslist+jwt', headers: { 'Cache-Control': `public, max-age=${LIST_TTL_SECONDS}` }, body: token };
    },
  }];
}
