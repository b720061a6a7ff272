import type { Deps } from '../deps.js';
import { Conflict, NotFound, ValidationError } from '../errors.js';
import type { Route } from '../http/types.js';
import { resourceMetadataUrl } from '../resources/metadata-url.js';
import { isResourceIdentifier } from '../resources/uri.js';
import { newId } from '../store/ids.js';
import { MAX_RESOURCE_SERVERS, type ResourceServer } from '../store/resource-servers.js';
import { adminRoute, fetched, found, listed } from './route.js';

const READ = 'admin:resource-servers:read';
const WRITE = 'admin:resource-servers:write';
const tags = ['resource-servers'];

const notFound = () => new NotFound('not_found', 'No such resource server.');
const identifierTaken = () => new Conflict('conflict', 'A resource server with this identifier is already registered in the tenant.');

/** The identifier must parse as a URL too (the schema's pattern alone lets `https://[` through). */
function checkIdentifier(identifier: string | undefined): void {
  if (identifier !== undefined && !isResourceIdentifier(identifier)) throw new ValidationError({ identifier: ['must be an absolute URI with a host and without a fragment'] });
}

/**
 * Resource servers of the current tenant (RFC 8707 resource indicators, RFC 9728 metadata): clients
 * name their identifier as `resource` and get tokens whose `aud` it is, carrying only its scopes. Every
 * change evicts the tenant's entry in each process's cache (src/resources/cache.ts), which /token reads.
 */
export function resourceServerRoutes(deps: Deps): Route[] {
  const view = (r: ResourceServer): Record<string, unknown> => ({
    id: r.id, tenant_id: r.tenant_id, identifier: r.identifier, name: r.name, scopes: r.scopes, documentation_uri: r.documentation_uri,
    resource_metadata: resourceMetadataUrl(deps.config.issuer, r.tenant_id, r.id), created_at: Number(r.created_at), updated_at: Number(r.updated_at),
  });
  const changed = (d: Deps, tenantId: string) => d.tokens.resourceServers.changed(tenantId, d.trace);
  return [
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/resource-servers', permission: READ, tags, query: 'query.admin-resource-server-list',
      summary: 'List resource servers, newest first', response: { 200: 'admin.resource-server-list' },
      handler: listed((store, q) => store.resourceServers.list(q), view),
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/resource-servers', permission: WRITE, tags, body: 'admin.resource-server-create',
      summary: 'Register a resource server (RFC 8707 resource, RFC 9728 protected resource)', response: { 201: 'admin.resource-server' }, errors: [409],
      audit: { action: 'resource_server.create', resourceType: 'resource_server' },
      handler: async ({ deps, ctx, body, mutate }) => {
        checkIdentifier(body.identifier);
        const r = await mutate(async (tx, store) => {
          // Serialises registrations of the tenant, so the bound below holds under concurrent creates.
          await tx`select pg_advisory_xact_lock(hashtext('resource_servers'), hashtext(${ctx.tenantId}))`;
          if (await store.resourceServers.count() >= MAX_RESOURCE_SERVERS) throw new Conflict('conflict', `A tenant registers at most ${MAX_RESOURCE_SERVERS} resource servers.`);
          const rs = found(await store.resourceServers.insert(newId('rs'), body), identifierTaken);
          return { result: rs, resourceId: rs.id, after: view(rs) };
        });
        await changed(deps, ctx.tenantId);
        return { status: 201, body: view(r) };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/resource-servers/:id', permission: READ, tags,
      summary: 'Get a resource server', response: { 200: 'admin.resource-server' }, errors: [404],
      handler: fetched((store, id) => store.resourceServers.get(id), view, notFound),
    }),
    adminRoute(deps, {
      method: 'PUT', path: '/api/admin/resource-servers/:id', permission: WRITE, tags, body: 'admin.resource-server-update',
      summary: 'Update a resource server: the fields given replace the stored ones', response: { 200: 'admin.resource-server' }, errors: [404, 409],
      audit: { action: 'resource_server.update', resourceType: 'resource_server' },
      handler: async ({ deps, ctx, body, params, mutate }) => {
        checkIdentifier(body.identifier);
        const r = await mutate(async (_tx, store) => {
          const cur = found(await store.resourceServers.get(params.id!), notFound);
          const next = await store.resourceServers.update(cur.id, body);
          if (next === 'identifier_taken') throw identifierTaken();
          return { result: found(next, notFound), before: view(cur), after: view(found(next, notFound)) };
        });
        await changed(deps, ctx.tenantId);
        return { body: view(r) };
      },
    }),
    adminRoute(deps, {
      method: 'DELETE', path: '/api/admin/resource-servers/:id', permission: WRITE, tags,
      summary: 'Delete a resource server (tokens already issued for it stay valid until they expire)', response: { 204: null }, errors: [404],
      audit: { action: 'resource_server.delete', resourceType: 'resource_server', severity: 'warn' },
      handler: async ({ deps, ctx, params, mutate }) => {
        await mutate(async (_tx, store) => ({ result: null, before: view(found(await store.resourceServers.delete(params.id!), notFound)) }));
        await changed(deps, ctx.tenantId);
        return { status: 204 };
      },
    }),
  ];
}
