import { checkKeyHashKey, checkKeyView, newCheckKey } from '../check/keys.js';
import type { Deps } from '../deps.js';
import { Conflict, NotFound } from '../errors.js';
import type { Route } from '../http/types.js';
import { newId } from '../store/ids.js';
import { hashSecret } from '../tokens/secrets.js';
import { adminRoute, fetched, found } from './route.js';

const READ = 'admin:check-api-keys:read';
const WRITE = 'admin:check-api-keys:write';
const tags = ['check-api-keys'];
const MAX_PAGE = 100;
const notFound = () => new NotFound('not_found', 'No such check API key.');

/** Check API keys of the current tenant: list, get, create (plaintext shown once), revoke. */
export function checkApiKeyRoutes(deps: Deps): Route[] {
  const hashKey = checkKeyHashKey(deps.config.keyEncryptionKey);
  return [
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/check-api-keys', permission: READ, tags, query: 'query.admin-check-api-key-list',
      summary: 'List check API keys of the tenant (never the key itself)', response: { 200: 'admin.check-api-key-list' },
      handler: async ({ query, store }) => {
        // The spec caps the page size at 100 rather than refusing larger ones.
        const limit = Math.min(query.limit, MAX_PAGE);
        const r = await store.checkApiKeys.list({ ...query, limit });
        return { body: { keys: r.rows.map(checkKeyView), total: r.total, page: query.page, limit } };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/check-api-keys', permission: WRITE, tags, body: 'admin.check-api-key-create',
      summary: 'Create a check API key for a client of the tenant; the key is in this response only', response: { 201: 'admin.check-api-key-created' }, errors: [404],
      audit: { action: 'check_api_key.create', resourceType: 'check_api_key' },
      handler: async ({ ctx, body, mutate }) => {
        const { key, prefix } = newCheckKey();
        const row = await mutate(async (_tx, store) => {
          const k = await store.checkApiKeys.insert({
            id: newId('cak'), clientId: body.client_id, name: body.name, prefix, hash: hashSecret(hashKey, key), operations: body.allowed_operations,
            tier: body.rate_limit_tier, expiresAt: body.expires_at ?? null, createdBy: ctx.actor.id,
          });
          if (!k) throw new NotFound('client_not_found', 'No such client.');
          return { result: k, resourceId: k.id, after: checkKeyView(k) };
        });
        return { status: 201, body: { ...checkKeyView(row), key } };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/check-api-keys/:id', permission: READ, tags,
      summary: 'Get a check API key record', response: { 200: 'admin.check-api-key' }, errors: [404],
      handler: fetched((store, id) => store.checkApiKeys.get(id), checkKeyView, notFound),
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/check-api-keys/:id/revoke', permission: WRITE, tags,
      summary: 'Revoke a check API key (it stops working at once; listed with is_active false)', response: { 200: 'admin.check-api-key' }, errors: [404, 409],
      audit: { action: 'check_api_key.revoke', resourceType: 'check_api_key', severity: 'warn' },
      handler: async ({ params, mutate }) => {
        const k = await mutate(async (_tx, store) => {
          const cur = found(await store.checkApiKeys.get(params.id!, true), notFound);
          if (!cur.is_active) throw new Conflict('conflict', 'The key is already revoked.');
          const next = found(await store.checkApiKeys.revoke(cur.id), notFound);
          return { result: next, before: checkKeyView(cur), after: checkKeyView(next) };
        });
        return { body: checkKeyView(k) };
      },
    }),
  ];
}
