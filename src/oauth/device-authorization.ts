import { depsFor } from '../request-deps.js';
import { authenticateClient, clientAuthContext } from '../clients/authenticate.js';
import { GRANT } from '../clients/model.js';
import type { Deps } from '../deps.js';
import { OAuthError } from '../errors.js';
import { route } from '../http/route.js';
import type { Route } from '../http/types.js';
import { requirementsFor } from '../tenants/security-profile.js';
import { servingStatus } from '../tenants/settings-cache.js';
import { hitLimits } from '../store/rate-limit.js';
import { redisKeys } from '../store/redis-keys.js';
import { DEVICE } from '../device/options.js';
import { createDeviceAuthorization } from '../device/store.js';
import { displayUserCode } from '../device/user-code.js';
import { CLIENT_AUTH_PARAMS } from './grants/grant.js';
import { NO_STORE, one, scopeList } from './params.js';
import { pick } from './token.js';

/**
 * POST /device_authorization (RFC 8628 3.1, 3.2): a client allowed the device code grant gets a device
 * code to poll /token with and a user code for the person to enter at /device. The lifetime is the
 * server's (DEVICE_CODE_TTL_SECONDS), shortened by the tenant's `device_code_ttl`; the interval starts
 * at DEVICE_POLL_INTERVAL_SECONDS.
 */
export function deviceAuthorizationRoutes(base: Deps): Route[] {
  const { issuer } = base.config;
  const authCtx = clientAuthContext(base, `${issuer}/device_authorization`);
  return [route({
    method: 'POST', path: '/device_authorization', iface: 'oauth', body: 'form', bodySchema: 'form.device-authorization',
    doc: { summary: 'Device authorization request (RFC 8628): a device code to poll /token with and a user code to enter at /device', tags: ['oauth'], security: 'basic', responses: { 200: 'oauth.device-authorization-response' }, errors: [400, 401, 403, 429, 503] },
    handler: async ({ req, body }) => {
      // A sampled request's view (its clients make spans under it); the process's deps otherwise.
      const deps = depsFor(base, req);
      const form = pick(body, [...CLIENT_AUTH_PARAMS, 'scope']);
      const client = await authenticateClient(authCtx, req, pick(body, CLIENT_AUTH_PARAMS));
      if (!client.grantTypes.includes(GRANT.deviceCode)) throw new OAuthError('unauthorized_client', 'The client may not use the device authorization grant.');
      const tenant = await deps.tokens.tenantSettings.get(client.tenantId);
      if (!servingStatus(tenant.status)) throw new OAuthError('unauthorized_client', "The client's tenant is suspended.");
      if (requirementsFor(client, tenant.settings).privateKeyJwt && client.authMethod !== 'private_key_jwt') throw new OAuthError('invalid_client', 'This tenant\'s security profile (FAPI 2.0) requires private_key_jwt client authentication.');
      if (form.client_id !== undefined && form.client_id !== client.clientId) throw new OAuthError('invalid_request', 'client_id is not the authenticated client.');
      const raw = one(form, 'scope');
      const wanted = raw === undefined ? client.scopes : scopeList(raw);
      const scope = wanted.filter((s) => client.scopes.includes(s));
      if (scope.length === 0) throw new OAuthError('invalid_scope', 'None of the requested scopes is allowed for this application.');
      // A public client's id is no secret: bound what one address can make us hold in Redis.
      await hitLimits(deps.redis, [{ key: redisKeys.deviceAuthorizationRate(client.clientId, req.ip || 'unknown'), limit: DEVICE.authorizationsPerSourcePerMinute, windowMs: 60_000 }], 'Too many device authorizations from this address; try again later.');
      const ttl = Math.min(deps.config.deviceCodeTtlSeconds, tenant.settings.device_code_ttl ?? Infinity);
      const interval = deps.config.devicePollIntervalSeconds;
      const { deviceCode, userCode } = await createDeviceAuthorization(deps.redis, { tenantId: client.tenantId, clientId: client.clientId, scope, ttlSeconds: ttl, intervalSeconds: interval });
      const shown = displayUserCode(userCode);
      return {
        headers: NO_STORE,
        body: {
          device_code: deviceCode, user_code: shown, verification_uri: `${issuer}/device`,
          verification_uri_complete: `${issuer}/device?user_code=${encodeURIComponent(shown)}`, expires_in: ttl, interval,
        },
      };
    },
  })];
}
