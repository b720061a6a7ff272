import { adminClaimsFor } from '../../tokens/user-claims.js';
import { GRANT } from '../../clients/model.js';
import type { Deps } from '../../deps.js';
import { OAuthError } from '../../errors.js';
import { consumeRefreshToken, storeRefreshToken } from '../../tokens/refresh-tokens.js';
import { one, required } from '../params.js';
import { audList, resourcesOf, scopeWithin, withinGrant } from '../resource-indicators.js';
import { audClaim, bindTo, narrowScope, tokenType, ttlFor, type Grant } from './grant.js';

/** Revokes the access tokens issued from a replayed refresh token family, until they would expire. */
async function revokeAccessJtis(deps: Deps, tenant: string, jtis: string[]): Promise<void> {
  // Access token lifetimes are capped at one day (config and client limits), so this outlives any of them.
  const until = Math.floor(Date.now() / 1000) + 86_400;
  await Promise.all(jtis.map((j) => deps.tokens.revocations.revoke(tenant, j, until, deps.trace)));
}

/** RFC 6749 6 with rotation on every use and reuse detection (RFC 9700 4.14.2). */
export const refreshToken: Grant = {
  type: GRANT.refreshToken,
  params: ['refresh_token', 'scope', 'resource'],
  async handle(deps, client, form, _ahead, binding) {
    const presented = required(form, 'refresh_token');
    const requested = one(form, 'scope');
    const wanted = resourcesOf(form.resource);
    const servers = await deps.tokens.resourceServers.get(client.tenantId);
    let scope = '';
    let tokenScope = '';
    let aud: string | string[] = deps.config.issuer;
    const outcome = await consumeRefreshToken(deps.sql, presented, client, binding?.jkt, (row) => {
      // A refresh may narrow the scope, never widen it (RFC 6749 6).
      scope = narrowScope(requested, row.scope.split(' ').filter(Boolean), client.scopes);
      const claims = row.claims as { aud?: string | string[]; resources?: string[] };
      const base = claims.aud ?? deps.config.issuer;
      // RFC 8707 2.2: a resource within the grant (its authorization request's resources, else its audience), downscoped to it.
      aud = wanted.length ? audClaim(withinGrant(wanted, claims.resources ?? audList(base), [])) : base;
      tokenScope = scopeWithin(servers, audList(aud), scope, requested !== undefined);
    });
    if (outcome.kind === 'key_mismatch') {
      if (!outcome.proved) throw new OAuthError('invalid_dpop_proof', 'The refresh token is DPoP-bound: send a DPoP proof of its key.');
      throw new OAuthError('invalid_grant', 'The refresh token is bound to another DPoP key.');
    }
    if (outcome.kind === 'reused') {
      await revokeAccessJtis(deps, client.tenantId, outcome.accessJtis);
      deps.log.warn({ client_id: client.clientId, family: outcome.record.family_id.slice(0, 8) }, 'refresh token reuse: family revoked');
      throw new OAuthError('invalid_grant', 'The refresh token is invalid.');
    }
    if (outcome.kind !== 'rotated') throw new OAuthError('invalid_grant', 'The refresh token is invalid.');
    const rec = outcome.record;
    if (rec.tenant_id !== client.tenantId) throw new OAuthError('invalid_grant', 'The refresh token is invalid.');
    const ttl = (await ttlFor(deps, client));
    // Administrator permissions are read again at every refresh, so role changes take effect.
    const admin = await adminClaimsFor(deps, rec.tenant_id, rec.sub, aud, tokenScope);
    const at = await deps.tokens.accessTokens.issue({
      tenant: rec.tenant_id, sub: rec.sub, clientId: client.clientId, aud, scope: tokenScope, ttlSeconds: ttl,
      extra: bindTo({ ...(rec.auth_time ? { auth_time: Math.floor(Number(rec.auth_time) / 1000) } : {}), ...admin }, binding),
    }, deps.trace);
    const next = await storeRefreshToken(deps.sql, {
      tenantId: rec.tenant_id, clientId: client.clientId, sub: rec.sub, scope, familyId: rec.family_id, accessJti: at.jti,
      authTime: rec.auth_time === null ? null : Number(rec.auth_time), claims: rec.claims,
      ttlSeconds: Math.max(1, Math.floor((Number(rec.expires_at) - Date.now()) / 1000)), generation: deps.tokens.sharding.current(client.clientId),
    });
    return { access_token: at.token, token_type: tokenType(binding), expires_in: ttl, scope: tokenScope, refresh_token: next };
  },
};
