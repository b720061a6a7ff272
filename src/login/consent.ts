import type { Client } from '../clients/model.js';
import type { Deps } from '../deps.js';
import { redisKeys } from '../store/redis-keys.js';
import { LOGIN } from './options.js';

/**
 * Whether the user has consented to every requested scope for this client. Answered from a Redis cache
 * on the hot path; Postgres is asked on a miss only. First-party clients need no consent page, but their
 * first use is still recorded as a consent (so the user sees it at /api/user/consents).
 */
export async function hasConsent(deps: Deps, client: Client, userId: string, scopes: string[]): Promise<boolean> {
  const key = redisKeys.consent(client.tenantId, userId, client.clientId);
  const cached = await deps.redis.get(key).catch(() => null);
  let granted: string[] | null = cached ? (JSON.parse(cached) as string[]) : null;
  if (granted && scopes.every((s) => granted!.includes(s))) return true;
  if (client.firstParty) {
    granted = await grantConsent(deps, client, userId, scopes);
    return true;
  }
  if (!cached) {
    granted = await deps.store.forTenant(client.tenantId).consents.find(userId, client.clientId);
    if (granted) await deps.redis.set(key, JSON.stringify(granted), 'EX', LOGIN.consentCacheSeconds).catch(() => {});
  }
  return !!granted && scopes.every((s) => granted!.includes(s));
}

export async function grantConsent(deps: Deps, client: Client, userId: string, scopes: string[]): Promise<string[]> {
  const granted = await deps.store.forTenant(client.tenantId).consents.upsert({ userId, clientId: client.clientId, scopes, policy: LOGIN.policyVersions });
  await deps.redis.set(redisKeys.consent(client.tenantId, userId, client.clientId), JSON.stringify(granted), 'EX', LOGIN.consentCacheSeconds).catch(() => {});
  return granted;
}
