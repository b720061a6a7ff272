import { adminAudience, ADMIN_SCOPE } from '../admin-access.js';
import { createClient } from '../clients/create.js';
import { GRANT } from '../clients/model.js';
import type { Deps } from '../deps.js';
import { Conflict, Forbidden, NotFound } from '../errors.js';
import type { Route } from '../http/types.js';
import { decodeCursor, page } from '../store/cursor.js';
import { newId } from '../store/ids.js';
import { enqueueTenantPurge } from '../tenants/purge.js';
import { listAllTenants, TenantRepository, type Tenant, type TenantStatus } from '../store/tenants.js';
import type { Sql, TxSql } from '../sql.js';
import type { AdminTenantSettings } from '../generated/types.js';
import type { SigningAlg } from '../tokens/algorithms.js';
import { syncTenantKeys } from '../tokens/tenant-keys.js';
import { found } from './route.js';
import { adminRoute } from './route.js';

const READ = 'admin:tenants:read';
const WRITE = 'admin:tenants:write';
const tags = ['tenants'];

export function tenantView(t: Tenant): Record<string, unknown> {
  return {
    id: t.id, name: t.name, display_name: t.display_name, status: t.status, settings: t.settings,
    created_at: Number(t.created_at), updated_at: Number(t.updated_at),
    suspended_at: t.suspended_at === null ? null : Number(t.suspended_at), deleted_at: t.deleted_at === null ? null : Number(t.deleted_at),
  };
}

const tenantNotFound = () => new NotFound('not_found', 'No such tenant.');

/** A lifecycle move: from the statuses allowed, to `to`; the suspension mark follows after commit. */
interface Move { action: string; to: TenantStatus; from: TenantStatus[]; summary: string; severity: 'info' | 'warn' | 'critical' }

/**
 * Tenants as a managed resource. Every route acts from the caller's own tenant (`tenant: 'own'`), so
 * the audit entries land in the platform admin's tenant; the tenant acted on is the path's id.
 * Platform admins only, except a tenant's own admin reading its own tenant.
 */
export function tenantRoutes(deps: Deps): Route[] {
  const lifecycle = (path: string, m: Move, method: 'POST' | 'DELETE' = 'POST', status = 200): Route => adminRoute(deps, {
    method, path, permission: WRITE, tags, tenant: 'own', platformOnly: true,
    summary: m.summary, response: { [status]: status === 204 ? null : 'admin.tenant' }, errors: [404, 409],
    audit: { action: m.action, resourceType: 'tenant', severity: m.severity },
    handler: async ({ deps: d, ctx, params, mutate }) => {
      const id = params.id!;
      // An admin cannot lock themselves out through their own tenant.
      if (id === ctx.tenantId) throw new Conflict('conflict', 'A platform administrator cannot suspend or delete their own tenant.');
      const t = await mutate(async (tx: TxSql) => {
        const repo = new TenantRepository(tx, id);
        const cur = found(await repo.lock(), tenantNotFound);
        if (!m.from.includes(cur.status)) throw new Conflict('conflict', `The tenant is ${cur.status}.`);
        const next = (await repo.setStatus(m.to))!;
        return { result: next, before: tenantView(cur), after: tenantView(next) };
      });
      await d.tokens.revocations.markTenant(id, t.status, d.trace);
      await d.tokens.tenantSettings.changed(id, d.trace);
      if (m.to === 'deleting') await enqueueTenantPurge(deps, id);
      return status === 204 ? { status } : { status, body: tenantView(t) };
    },
  });

  return [
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/tenants', permission: READ, tags, tenant: 'own', platformOnly: true, query: 'query.admin-tenant-list',
      summary: 'List tenants, newest first (platform admins)', response: { 200: 'admin.tenant-list' },
      handler: async ({ deps, ctx, query }) => {
        const p = page(await listAllTenants(deps.sql, { limit: query.limit, cursor: decodeCursor(query.cursor), status: query.status }), query.limit);
        return { body: { items: p.items.map(tenantView), cursor: p.next } };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/tenants', permission: WRITE, tags, tenant: 'own', platformOnly: true, body: 'admin.tenant-create',
      summary: 'Create a tenant, optionally with its first admin client (secret shown once)', response: { 201: 'admin.tenant-created' }, errors: [409],
      audit: { action: 'tenant.created', resourceType: 'tenant' },
      handler: async ({ deps, ctx, body, mutate }) => {
        const id = body.id ?? newId('t').toLowerCase().replace(/[^a-z0-9-]/g, '-');
        let keysMoved = false;
        const out = await mutate(async (tx: TxSql) => {
          const t = found(await new TenantRepository(tx, id).insert({ name: body.name, displayName: body.display_name, settings: body.settings }),
            () => new Conflict('conflict', 'A tenant with this id already exists.'));
          keysMoved = await syncTenantKeys(tx as unknown as Sql, deps.config.keyEncryptionKey, id, body.settings?.signing_algs as SigningAlg[] | undefined);
          let admin: { client_id: string; client_secret: string } | undefined;
          if (body.admin_client) {
            // As `svc bootstrap` makes it, but scoped to this tenant alone: it administers the tenant, not the platform.
            const { client, clientSecret } = await createClient(tx, deps.tokens.secretKey, {
              tenantId: id, clientId: `${id}-admin`, name: 'Tenant administrator', grantTypes: [GRANT.clientCredentials], scopes: [ADMIN_SCOPE],
              allowedAudiences: [adminAudience(deps.config.issuer)], permissions: ['admin:*'], tenantScopes: [{ scope_mode: 'allow', tenant_id: id }], accessTokenTtl: 3600,
            });
            admin = { client_id: client.clientId, client_secret: clientSecret! };
          }
          return { result: { t, admin }, resourceId: id, after: { ...tenantView(t), admin_client_id: admin?.client_id ?? null } };
        });
        if (keysMoved) await deps.tokens.keysChanged();
        await deps.tokens.tenantSettings.changed(out.t.id, deps.trace);
        return { status: 201, body: { ...tenantView(out.t), ...(out.admin ? { admin_client: out.admin } : {}) } };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/tenants/:id', permission: READ, tags, tenant: 'own',
      summary: 'Get a tenant (platform admins; a tenant admin its own)', response: { 200: 'admin.tenant' }, errors: [404],
      handler: async ({ deps, ctx, params }) => {
        if (!ctx.platform && params.id !== ctx.tenantId) throw new Forbidden('forbidden', 'You may only read your own tenant.');
        return { body: tenantView(found(await new TenantRepository(deps.sql, params.id!).get(), tenantNotFound)) };
      },
    }),
    adminRoute(deps, {
      method: 'PUT', path: '/api/admin/tenants/:id', permission: WRITE, tags, tenant: 'own', platformOnly: true, body: 'admin.tenant-update',
      summary: 'Update a tenant: the fields given replace the stored ones (settings as a whole)', response: { 200: 'admin.tenant' }, errors: [404, 409],
      audit: { action: 'tenant.updated', resourceType: 'tenant' },
      handler: async ({ deps, ctx, params, body, mutate }) => {
        const t0 = params.id!;
        let keysMoved = false;
        const t = await mutate(async (tx: TxSql) => {
          const repo = new TenantRepository(tx, t0);
          const cur = found(await repo.lock(), tenantNotFound);
          if (cur.status === 'deleting' || cur.status === 'deleted') throw new Conflict('conflict', `The tenant is ${cur.status}.`);
          const next = (await repo.update({ name: body.name, displayName: body.display_name, settings: body.settings }))!;
          // The tenant's keys follow its signing_algs in the same transaction: a new algorithm's keys exist before any process signs with it.
          keysMoved = await syncTenantKeys(tx as unknown as Sql, deps.config.keyEncryptionKey, t0, (next.settings as AdminTenantSettings).signing_algs as SigningAlg[] | undefined);
          return { result: next, before: tenantView(cur), after: tenantView(next) };
        });
        // Keys first: a process that sees the new settings before its ring has reloaded still signs with a published key.
        if (keysMoved) await deps.tokens.keysChanged();
        await deps.tokens.tenantSettings.changed(t.id, deps.trace);
        return { body: tenantView(t) };
      },
    }),
    lifecycle('/api/admin/tenants/:id/suspend', { action: 'tenant.suspended', to: 'suspended', from: ['active', 'suspended'], severity: 'warn',
      summary: 'Suspend a tenant: its tokens are inactive, its logins and admin calls refused, until unsuspended' }),
    lifecycle('/api/admin/tenants/:id/unsuspend', { action: 'tenant.unsuspended', to: 'active', from: ['suspended', 'active'], severity: 'warn',
      summary: 'Unsuspend a tenant: its unexpired tokens are served again' }),
    lifecycle('/api/admin/tenants/:id', { action: 'tenant.deleted', to: 'deleting', from: ['active', 'suspended'], severity: 'critical',
      summary: 'Delete a tenant: marks it deleting (refused as when suspended) and queues the purge of all its data; then deleted' }, 'DELETE', 202),
  ];
}
