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
    const found = await deps.store.forTenant(client.tenantId).consents.find(userId, client.clientId);
    granted = found?.scopes ?? null;
    const left = found?.expiresAt == null ? LOGIN.consentCacheSeconds : Math.floor((found.expiresAt - Date.now()) / 1000);
    if (granted && left > 0) await deps.redis.set(key, JSON.stringify(granted), 'EX', Math.min(LOGIN.consentCacheSeconds, left)).catch(() => {});
  }
  return !!granted && scopes.every((s) => granted!.includes(s));
}

/**
 * Records the user's consent to `scopes` (all the page showed: it has no per-scope choice, so they are
 * the selected scopes of this grant). It lapses after the tenant's `consent_ttl` seconds when set; the
 * cache entry never outlives it.
 */
export async function grantConsent(deps: Deps, client: Client, userId: string, scopes: string[]): Promise<string[]> {
  const { settings } = await deps.tokens.tenantSettings.get(client.tenantId);
  const ttl = settings.consent_ttl;
  const expiresAt = ttl === undefined ? null : Date.now() + ttl * 1000;
  const granted = await deps.store.forTenant(client.tenantId).consents.upsert({ userId, clientId: client.clientId, scopes, expiresAt, policy: LOGIN.policyVersions });
  const cacheFor = Math.min(LOGIN.consentCacheSeconds, ttl ?? Infinity);
  await deps.redis.set(redisKeys.consent(client.tenantId, userId, client.clientId), JSON.stringify(granted), 'EX', cacheFor).catch(() => {});
  return granted;
}
