import { GRANT } from '../../clients/model.js';
import { OAuthError } from '../../errors.js';
import { refreshTtl } from '../../tenants/settings-cache.js';
import { storeRefreshToken } from '../../tokens/refresh-tokens.js';
import { adminClaimsFor } from '../../tokens/user-claims.js';
import { DEVICE } from '../device/options.js';
import { pollDeviceCode, type Poll } from '../device/store.js';
import { issueIdToken } from '../id-token.js';
import { required } from '../params.js';
import { scopeForAudience } from '../resource-indicators.js';
import { audClaim, bindTo, resolveTargets, tokenType, ttlFor, type Grant } from './grant.js';

/** The answer to every poll that does not get tokens (RFC 8628 3.5; RFC 6749 5.2 for the rest). */
const REFUSALS: Record<Exclude<Poll['kind'], 'approved'>, () => OAuthError> = {
  pending: () => new OAuthError('authorization_pending', 'The user has not yet approved this device: poll again after the interval.'),
  slow_down: () => new OAuthError('slow_down', `Polling too fast: the interval is now ${DEVICE.slowDownStepSeconds} seconds longer.`),
  // RFC 6749's code, answered with 400 as every RFC 8628 3.5 error (not the 403 of a page).
  denied: () => new OAuthError('access_denied', 'The user denied the authorization.', 400),
  expired: () => new OAuthError('expired_token', 'The device code has expired: start a new device authorization.'),
  used: () => new OAuthError('invalid_grant', 'The device code was already used.'),
  unknown: () => new OAuthError('invalid_grant', 'The device code is invalid.'),
  // Another client's code (of this or another tenant) is as unknown to this client as a made-up one.
  other_client: () => new OAuthError('invalid_grant', 'The device code is invalid.'),
};

/**
 * RFC 8628 3.4: the device polls with its device code until the person has approved or denied it at
 * /device. An approved code is spent by the poll that sees it (one script in src/oauth/device/store.ts),
 * which gets the same tokens as an authorization code would: an access token (bound to the poll's DPoP
 * proof, if any), an ID token for openid, and a refresh token for offline_access or a first-party client.
 */
export const deviceCode: Grant = {
  type: GRANT.deviceCode,
  params: ['device_code', 'audience', 'resource'],
  async handle(deps, client, form, _ahead, binding) {
    const poll = await pollDeviceCode(deps.redis, required(form, 'device_code'), client.clientId);
    if (poll.kind !== 'approved') throw REFUSALS[poll.kind]();
    if (poll.tenantId !== client.tenantId) throw REFUSALS.other_client();
    const { user } = poll;
    const scope = poll.scope.join(' ');
    const { aud } = resolveTargets(client, form, deps.config.issuer, deps.config.issuer);
    // RFC 8707: the access token carries only the resource's scopes; the refresh token keeps the grant's.
    const tokenScope = await scopeForAudience(deps, client.tenantId, aud, scope, false);
    const ttl = await ttlFor(deps, client);
    const admin = await adminClaimsFor(deps, client.tenantId, user.userId, audClaim(aud), tokenScope);
    const at = await deps.tokens.accessTokens.issue({
      tenant: client.tenantId, sub: user.userId, clientId: client.clientId, aud: audClaim(aud), scope: tokenScope, ttlSeconds: ttl,
      extra: bindTo({ auth_time: user.authTime, email: user.email, ...admin }, binding),
    });
    const body: Record<string, unknown> = { access_token: at.token, token_type: tokenType(binding), expires_in: ttl, scope: tokenScope };
    const [idToken, refresh] = await Promise.all([
      poll.scope.includes('openid')
        ? issueIdToken(deps, { clientId: client.clientId, sub: user.userId, email: user.email, emailVerified: true, authTime: user.authTime, accessToken: at.token, tenant: client.tenantId })
        : undefined,
      client.grantTypes.includes(GRANT.refreshToken) && (poll.scope.includes('offline_access') || client.firstParty)
        ? storeRefreshToken(deps.sql, {
          tenantId: client.tenantId, clientId: client.clientId, sub: user.userId, scope, accessJti: at.jti, authTime: user.authTime * 1000,
          // As for codes: a public client's refresh token is bound to the redeeming proof's key (RFC 9449 5).
          claims: binding && client.authMethod === 'none' ? { aud: audClaim(aud), cnf: { jkt: binding.jkt } } : { aud: audClaim(aud) },
          ttlSeconds: refreshTtl(deps.config.refreshTokenTtlSeconds, client.refreshTokenTtl, (await deps.tokens.tenantSettings.get(client.tenantId)).settings),
          generation: deps.tokens.sharding.current(client.clientId),
        })
        : undefined,
    ]);
    if (refresh) body.refresh_token = refresh;
    if (idToken) body.id_token = idToken;
    return body;
  },
};
