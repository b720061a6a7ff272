import { depsFor } from '../request-deps.js';
import { authenticateClient, clientAuthContext, proofClaimant } from '../clients/authenticate.js';
import { GRANT } from '../clients/model.js';
import type { Deps } from '../deps.js';
import { DpopAtEndpoint } from '../dpop/token-request.js';
import { OAuthError } from '../errors.js';
import { route } from '../http/route.js';
import type { Route } from '../http/types.js';
import { checkRedirectUri } from '../login/authorize/check-redirect-uri.js';
import { PageError, RedirectableError, validateRequest, type Query } from '../login/authorize/index.js';
import { PUSHED_TTL, savePushed } from '../login/authorize/pushed.js';
import { verifyRequestObject } from '../login/authorize/request-object.js';
import { requirementsFor } from '../tenants/security-profile.js';
import { servingStatus } from '../tenants/settings-cache.js';
import { CLIENT_AUTH_PARAMS } from './grants/grant.js';
import { NO_STORE } from './params.js';
import { pick } from './token.js';

const AUTH = new Set<string>(CLIENT_AUTH_PARAMS);

/**
 * POST /par (RFC 9126): the client authenticates as at /token and pushes its authorization request,
 * which is validated now, as /authorize would, and answered in JSON; /authorize then takes only
 * client_id and the request_uri. A DPoP proof here binds the code to its key (RFC 9449 10).
 */
export function parRoutes(base: Deps): Route[] {
  const { issuer } = base.config;
  const authCtx = clientAuthContext(base, `${issuer}/par`);
  const dpop = new DpopAtEndpoint(base.redis, base.config.keyEncryptionKey, `${issuer}/par`);
  return [route({
    method: 'POST', path: '/par', iface: 'oauth', body: 'form', bodySchema: 'form.par',
    doc: { summary: 'Pushed authorization request (RFC 9126): validate an authorization request now, answer its request_uri', tags: ['oauth'], security: 'basic', responses: { 201: 'oauth.par-response' }, errors: [400, 401, 403, 503] },
    handler: async ({ req, body }) => {
      // A sampled request's view (its clients make spans under it); the process's deps otherwise.
      const deps = depsFor(base, req);
      const form = body as Record<string, string | string[] | undefined>;
      const auth = pick(body, CLIENT_AUTH_PARAMS);
      const proof = dpop.start(req, () => proofClaimant(req, auth));
      const client = await authenticateClient(authCtx, req, auth);
      if (!client.grantTypes.includes(GRANT.authorizationCode)) throw new OAuthError('unauthorized_client', 'The client may not use the authorization code flow.');
      const tenant = await deps.tokens.tenantSettings.get(client.tenantId);
      if (!servingStatus(tenant.status)) throw new OAuthError('unauthorized_client', "The client's tenant is suspended.");
      const need = requirementsFor(client, tenant.settings);
      if (need.privateKeyJwt && client.authMethod !== 'private_key_jwt') throw new OAuthError('invalid_client', 'This tenant\'s security profile (FAPI 2.0) requires private_key_jwt client authentication.');
      if (form.request_uri !== undefined) throw new OAuthError('invalid_request', 'request_uri cannot be pushed (RFC 9126 2.1).');
      if (form.client_id !== undefined && form.client_id !== client.clientId) throw new OAuthError('invalid_request', 'client_id is not the authenticated client.');
      let q: Query = {};
      if (typeof form.request === 'string') q = await verifyRequestObject(client, form.request, issuer);
      else for (const [k, v] of Object.entries(form)) if (!AUTH.has(k) && v !== undefined) q[k] = v;
      q.client_id = client.clientId;
      const binding = await dpop.finish(proof, client, tenant, false);
      if (binding) {
        if (q.dpop_jkt !== undefined && q.dpop_jkt !== binding.jkt) throw new OAuthError('invalid_dpop_proof', 'dpop_jkt is not the thumbprint of the proof\'s key.');
        q.dpop_jkt = binding.jkt;
      }
      try {
        validateRequest(client, checkRedirectUri(client, q), q, need);
      } catch (err) {
        if (err instanceof RedirectableError) throw new OAuthError(err.oauthCode, err.message);
        if (err instanceof PageError) throw new OAuthError('invalid_request', err.message);
        throw err;
      }
      const uri = await savePushed(deps.redis, client.clientId, q);
      return { status: 201, headers: NO_STORE, body: { request_uri: uri, expires_in: PUSHED_TTL } };
    },
  })];
}
