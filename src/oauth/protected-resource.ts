import { ADMIN_SCOPE, adminAudience } from '../admin-access.js';
import type { Deps } from '../deps.js';
import { DPOP_ALGS } from '../dpop/proof.js';
import { NotFound } from '../errors.js';
import type { Route } from '../http/types.js';
import { checkResource, PRM_PATH } from '../resources/metadata-url.js';
import { servingStatus } from '../tenants/settings-cache.js';
import type { ResourceServer } from '../store/resource-servers.js';

const TENANT = /^[a-z0-9][a-z0-9-]{1,62}$/;
const ID = /^rs_[0-9a-f]{24}$/;
const notFound = () => new NotFound('not_found', 'No such protected resource.');

/** RFC 9728 2 for a resource server registered in a tenant: svc is its authorization server. */
export function registeredMetadata(issuer: string, rs: ResourceServer): Record<string, unknown> {
  return {
    resource: rs.identifier, authorization_servers: [issuer], scopes_supported: rs.scopes,
    // RFC 6750 2.1 only: tokens in a query or form body leak into logs and caches.
    bearer_methods_supported: ['header'],
    // svc binds tokens for any resource to a DPoP proof's key (RFC 9449): the algorithms it accepts for proofs.
    dpop_signing_alg_values_supported: [...DPOP_ALGS],
    resource_name: rs.name,
    ...(rs.documentation_uri ? { resource_documentation: rs.documentation_uri } : {}),
  };
}

/**
 * GET /.well-known/oauth-protected-resource/... (RFC 9728 3): the metadata of the administration API and
 * the check API (at their RFC 9728 3.1 locations), and of each resource server registered in a tenant
 * (src/admin/resource-servers.ts), read from the per-process cache. Public, as discovery is.
 */
export function protectedResourceRoutes(deps: Deps): Route[] {
  const { issuer } = deps.config;
  const json = (body: unknown, maxAge: number) => ({ type: 'application/json', headers: { 'Cache-Control': `public, max-age=${maxAge}` }, body: JSON.stringify(body) });
  const admin = json({
    resource: adminAudience(issuer), authorization_servers: [issuer], scopes_supported: [ADMIN_SCOPE], bearer_methods_supported: ['header'],
    resource_name: 'svc administration API',
  }, 300);
  const check = json({ resource: checkResource(issuer), bearer_methods_supported: ['header'], resource_name: 'svc check API (keys from /api/admin/check-api-keys)' }, 300);
  const doc = (summary: string) => ({ summary, tags: ['discovery'], security: 'none' as const, responses: { 200: 'oauth.protected-resource-metadata' } });
  return [
    { method: 'GET', path: `${PRM_PATH}/api/admin`, iface: 'public', doc: doc('Protected resource metadata (RFC 9728) of the administration API'), handler: () => admin },
    { method: 'GET', path: `${PRM_PATH}/api/check`, iface: 'public', doc: doc('Protected resource metadata (RFC 9728) of the check API'), handler: () => check },
    {
      method: 'GET', path: `${PRM_PATH}/tenants/:tenant/:id`, iface: 'public',
      doc: { ...doc('Protected resource metadata (RFC 9728) of a resource server registered in a tenant (its resource_metadata URL)'), errors: [404] },
      handler: async (req) => {
        const tenant = req.params.tenant!;
        const id = req.params.id!;
        // Shapes first: a made-up name never reaches the caches or Postgres.
        if (!TENANT.test(tenant) || !ID.test(id)) throw notFound();
        if (!servingStatus((await deps.tokens.tenantSettings.get(tenant)).status)) throw notFound();
        const rs = (await deps.tokens.resourceServers.get(tenant)).byId.get(id);
        if (!rs) throw notFound();
        return json(registeredMetadata(issuer, rs), 60);
      },
    },
  ];
}
