import type { Client } from '../clients/model.js';
import type { Deps } from '../deps.js';
import { consentUpsert, type ConsentInput } from '../store/consents.js';
import { redisKeys } from '../store/redis-keys.js';
import { LOGIN } from './options.js';

/**
 * Whether the user has consented to every requested scope for this client. Answered from a Redis cache
 * on the hot path; Postgres is asked on a miss only. First-party clients are not asked here (they need
 * no consent page): their consent is recorded when their code is redeemed (recordFirstPartyConsent), so
 * the user sees it at /api/user/consents.
 */
export async function hasConsent(deps: Deps, client: Client, userId: string, scopes: string[]): Promise<boolean> {
  const key = redisKeys.consent(client.tenantId, userId, client.clientId);
  const cached = await deps.redis.get(key).catch(() => null);
  let granted: string[] | null = cached ? (JSON.parse(cached) as string[]) : null;
  if (granted && scopes.every((s) => granted!.includes(s))) return true;
  if (!cached) {
    const found = await deps.store.forTenant(client.tenantId).consents.find(userId, client.clientId);
    granted = found?.scopes ?? null;
    const left = found?.expiresAt == null ? LOGIN.consentCacheSeconds : Math.floor((found.expiresAt - Date.now()) / 1000);
    if (granted && left > 0) await deps.redis.set(key, JSON.stringify(granted), 'EX', Math.min(LOGIN.consentCacheSeconds, left)).catch(() => {});
  }
  return !!granted && scopes.every((s) => granted!.includes(s));
}

/**
 * The consent record of `scopes` (all the page showed: it has no per-scope choice, so they are the
 * selected scopes of this grant). It lapses after the tenant's `consent_ttl` seconds when set.
 */
export async function consentInput(deps: Deps, client: Client, userId: string, scopes: string[]): Promise<ConsentInput & { ttl: number | undefined }> {
  const { settings } = await deps.tokens.tenantSettings.get(client.tenantId);
  const ttl = settings.consent_ttl;
  const expiresAt = ttl === undefined ? null : Date.now() + ttl * 1000;
  return { userId, clientId: client.clientId, scopes, expiresAt, policy: LOGIN.policyVersions, ttl };
}

/** Records the user's consent to `scopes` (see consentInput); the cache entry never outlives it. */
export async function grantConsent(deps: Deps, client: Client, userId: string, scopes: string[]): Promise<string[]> {
  const { ttl, ...input } = await consentInput(deps, client, userId, scopes);
  const granted = await deps.store.forTenant(client.tenantId).consents.upsert(input);
  const cacheFor = Math.min(LOGIN.consentCacheSeconds, ttl ?? Infinity);
  await deps.redis.set(redisKeys.consent(client.tenantId, userId, client.clientId), JSON.stringify(granted), 'EX', cacheFor).catch(() => {});
  return granted;
}

/**
 * A first-party client's consent (no page asks for it), recorded when its code is redeemed: with the
 * refresh token when one is issued (the same statement, see RefreshTokenRepository.insert), alone
 * otherwise. Nothing reads the cache for first-party clients, so none is written.
 */
export async function recordFirstPartyConsent(deps: Deps, client: Client, userId: string, scopes: string[]): Promise<void> {
  const { ttl: _ttl, ...input } = await consentInput(deps, client, userId, scopes);
  await consentUpsert(deps.sql, client.tenantId, input, true);
}
