import { depsFor } from '../request-deps.js';
import { tenantServing } from '../tenants/settings-cache.js';
import { hasPermission } from '../admin-access.js';
import type { Deps } from '../deps.js';
import { Forbidden, NotFound, Unauthorized } from '../errors.js';
import type { SchemaTypes } from '../generated/types.js';
import { bearerToken } from '../http/bearer.js';
import type { HttpRequest } from '../http/request.js';
import { route } from '../http/route.js';
import { bearerChallenge, checkMetadataUrl } from '../resources/metadata-url.js';
import type { Route } from '../http/types.js';
import type { CheckKeyRow } from '../store/check-api-keys.js';
import { checkKeyHashKey, findPresentedKey, type Operation } from './keys.js';
import { consume } from './rate-limit.js';
import { redisKeys } from '../store/redis-keys.js';
import { recordFailure, refuseWhenSpent } from '../store/rate-limit.js';

type CheckItem = SchemaTypes['check.check-request'];
type CheckAnswer = SchemaTypes['check.check-result'];


/** Authenticates the check API key, checks the operation is allowed, then charges its rate limit. */
async function authenticateKey(deps: Deps, hashKey: Buffer, req: HttpRequest, op: Operation, cost: number): Promise<CheckKeyRow> {
  const presented = bearerToken(req);
  // RFC 9728 5.1: the challenge names the check API's protected resource metadata.
  const challenge = bearerChallenge(checkMetadataUrl(deps.config.issuer));
  if (presented === undefined) throw new Unauthorized('unauthorized', 'A check API key is required (Authorization: Bearer).', challenge);
  const budget = [{ key: redisKeys.checkKeyFailIp(req.ip || 'unknown'), limit: deps.config.checkKeyFailuresPerMinute, windowMs: 60_000 }];
  await refuseWhenSpent(deps.redis, budget, 'Too many invalid check API keys from this address. Try again later.');
  const key = await findPresentedKey(deps.sql, hashKey, presented);
  if (!key || !key.is_active || (key.expires_at !== null && Number(key.expires_at) <= Date.now())) {
    await recordFailure(deps.redis, budget);
    throw new Unauthorized('unauthorized', 'The check API key is not valid.', challenge);
  }
  if (!key.allowed_operations.includes(op)) throw new Forbidden('forbidden', `This key may not use the ${op} operation.`);
  await consume(deps.redis, key.id, key.rate_limit_tier, cost);
  return key;
}

/** Answers for many (user, permission) pairs of one tenant, loading each user's permissions once. */
async function answer(deps: Deps, tenantId: string, items: CheckItem[]): Promise<CheckAnswer[]> {
  const perUser = new Map<string, Promise<{ status: string; perms: string[] } | null>>();
  const load = (id: string) => {
    let p = perUser.get(id);
    if (!p) {
      { const store = deps.store.forTenant(tenantId); p = store.users.get(id).then(async (u) => (u ? { status: u.status, perms: await store.roles.permissionsOf(id) } : null)); }
      perUser.set(id, p);
    }
    return p;
  };
  return Promise.all(items.map(async (it) => {
    const u = await load(it.user_id);
    if (!u) return { ...it, allowed: false, reason: 'user_not_found' };
    // A suspended or locked user holds no permissions while the state lasts.
    if (u.status !== 'active') return { ...it, allowed: false, reason: `user_${u.status}` };
    return { ...it, allowed: hasPermission(u.perms, it.permission) };
  }));
}

/** POST /api/check and /api/check/batch: does a user of the key's tenant hold a permission (through its roles)? */
export function checkRoutes(base: Deps): Route[] {
  const hashKey = checkKeyHashKey(base.config.keyEncryptionKey);
  return [
    route({
      method: 'POST', path: '/api/check', iface: 'admin', body: 'json', bodySchema: 'check.check-request',
      doc: { summary: 'Whether a user holds a permission (check API key with the check operation; rate-limited by tier)', tags: ['check'], responses: { 200: 'check.check-result' }, errors: [401, 403, 404, 422, 429], security: 'apikey' },
      handler: async ({ req, body }) => {
        // A sampled request's view (its clients make spans under it); the process's deps otherwise.
        const deps = depsFor(base, req);
        const key = await authenticateKey(deps, hashKey, req, 'check', 1);
        if (!(await tenantServing(deps.tokens.tenantSettings, key.tenant_id))) throw new Forbidden('forbidden', "This key's tenant is suspended.");
        const [a] = await answer(deps, key.tenant_id, [body]);
        if (!a || a.reason === 'user_not_found') throw new NotFound('user_not_found', 'No such user in this tenant.');
        return { body: a };
      },
    }),
    route({
      method: 'POST', path: '/api/check/batch', iface: 'admin', body: 'json', bodySchema: 'check.check-batch-request',
      doc: { summary: 'Up to 100 checks at once (operation batch; each check counts against the rate limit)', tags: ['check'], responses: { 200: 'check.check-batch-result' }, errors: [401, 403, 422, 429], security: 'apikey' },
      handler: async ({ req, body }) => {
        // A sampled request's view (its clients make spans under it); the process's deps otherwise.
        const deps = depsFor(base, req);
        const key = await authenticateKey(deps, hashKey, req, 'batch', body.checks.length);
        if (!(await tenantServing(deps.tokens.tenantSettings, key.tenant_id))) throw new Forbidden('forbidden', "This key's tenant is suspended.");
        return { body: { results: await answer(deps, key.tenant_id, body.checks) } };
      },
    }),
  ];
}
