import { checkKeyHashKey, checkKeyView, getCheckKey, insertCheckKey, listCheckKeys, newCheckKey, revokeCheckKey, type Operation, type Tier } from '../check/keys.js';
import type { Deps } from '../deps.js';
import { Conflict, NotFound } from '../errors.js';
import type { Route } from '../http/types.js';
import { hashSecret } from '../tokens/secrets.js';
import { adminContext } from './context.js';
import { audited } from './mutate.js';
import { newId } from './pagination.js';
import { ClientRepository } from '../store/clients.js';

const READ = 'admin:check-api-keys:read';
const WRITE = 'admin:check-api-keys:write';
const tags = ['check-api-keys'];
const notFound = () => new NotFound('not_found', 'No such check API key.');

/** Check API keys of the current tenant: list, get, create (plaintext shown once), revoke. */
export function checkApiKeyRoutes(deps: Deps): Route[] {
  const hashKey = checkKeyHashKey(deps.config.keyEncryptionKey);
  return [
    {
      method: 'GET', path: '/api/admin/check-api-keys', iface: 'admin', querySchema: 'query.admin-check-api-key-list',
      doc: { summary: 'List check API keys of the tenant (never the key itself)', tags, permission: READ, responses: { 200: 'admin.check-api-key-list' }, errors: [401, 403, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const q = req.queryData as { page: number; limit: number; client_id?: string; is_active?: boolean };
        const r = await listCheckKeys(deps.sql, ctx.tenantId, q);
        return { body: { keys: r.rows.map(checkKeyView), total: r.total, page: q.page, limit: q.limit } };
      },
    },
    {
      method: 'POST', path: '/api/admin/check-api-keys', iface: 'admin', body: 'json', bodySchema: 'admin.check-api-key-create',
      doc: { summary: 'Create a check API key for a client of the tenant; the key is in this response only', tags, permission: WRITE, responses: { 201: 'admin.check-api-key-created' }, errors: [401, 403, 404, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const b = req.data as { name: string; client_id: string; allowed_operations: Operation[]; rate_limit_tier: Tier; expires_at?: number | null };
        const { key, prefix } = newCheckKey();
        const row = await audited(deps, ctx, req, { action: 'check_api_key.create', resourceType: 'check_api_key' }, async (tx) => {
          if (!(await new ClientRepository(tx, ctx.tenantId).get(b.client_id))) throw new NotFound('client_not_found', 'No such client.');
          const k = await insertCheckKey(tx, ctx.tenantId, {
            id: newId('cak'), clientId: b.client_id, name: b.name, prefix, hash: hashSecret(hashKey, key), operations: b.allowed_operations,
            tier: b.rate_limit_tier, expiresAt: b.expires_at ?? null, createdBy: ctx.actor.id,
          });
          return { result: k, resourceId: k.id, after: checkKeyView(k) };
        });
        return { status: 201, body: { ...checkKeyView(row), key } };
      },
    },
    {
      method: 'GET', path: '/api/admin/check-api-keys/:id', iface: 'admin',
      doc: { summary: 'Get a check API key record', tags, permission: READ, responses: { 200: 'admin.check-api-key' }, errors: [401, 403, 404], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const k = await getCheckKey(deps.sql, ctx.tenantId, req.params.id!);
        if (!k) throw notFound();
        return { body: checkKeyView(k) };
      },
    },
    {
      method: 'POST', path: '/api/admin/check-api-keys/:id/revoke', iface: 'admin', body: 'none',
      doc: { summary: 'Revoke a check API key (it stops working at once; listed with is_active false)', tags, permission: WRITE, responses: { 200: 'admin.check-api-key' }, errors: [401, 403, 404, 409], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const id = req.params.id!;
        const k = await audited(deps, ctx, req, { action: 'check_api_key.revoke', resourceType: 'check_api_key', resourceId: id, severity: 'warn' }, async (tx) => {
          const cur = await getCheckKey(tx, ctx.tenantId, id, true);
          if (!cur) throw notFound();
          if (!cur.is_active) throw new Conflict('conflict', 'The key is already revoked.');
          const next = await revokeCheckKey(tx, ctx.tenantId, id);
          return { result: next, before: checkKeyView(cur), after: checkKeyView(next) };
        });
        return { body: checkKeyView(k) };
      },
    },
  ];
}
