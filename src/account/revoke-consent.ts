import type { Deps } from '../deps.js';
import { NotFound } from '../errors.js';
import { declareEvents } from '../events/declare.js';
import { redisKeys } from '../store/redis-keys.js';
import { grantMarkId } from '../tokens/revocation.js';

/** A revoked consent changes the user. */
const consentEvents = declareEvents(['user.updated']);

// Access tokens live at most a day (config and client limits), so the mark outlives every one of them.
const MAX_ACCESS_TTL = 86_400;

/**
 * Withdraws a user's consent to a client: every access token the client holds for the user is cut by a
 * not-before mark for that user at that client (written first, so a failure never leaves tokens live
 * after the consent is gone), every refresh token of the pair is revoked, the consent is deleted, and
 * `user.updated` (change `consent_revoked`) is recorded with it. Returns the client's id.
 */
export async function revokeConsent(deps: Deps, tenantId: string, userId: string, consentId: string): Promise<string> {
  const store = deps.store.forTenant(tenantId);
  const consent = (await store.consents.listForUser(userId)).find((c) => c.id === consentId);
  if (!consent) throw new NotFound('not_found', 'No such consent.');
  const clientId = consent.client_id;
  await deps.tokens.revocations.revokeBefore(tenantId, 'grant', grantMarkId(userId, clientId), Date.now(), MAX_ACCESS_TTL, deps.trace);
  await deps.store.transaction(tenantId, async ({ consents, refreshTokens }, tx) => {
    await refreshTokens.revokeForGrant(userId, clientId);
    await consents.deleteForUser(userId, consentId);
    await consentEvents.emit(tx, tenantId, 'user.updated', { user_id: userId, change: 'consent_revoked', client_id: clientId });
  });
  await deps.redis.del(redisKeys.consent(tenantId, userId, clientId)).catch(() => {});
  return clientId;
}
