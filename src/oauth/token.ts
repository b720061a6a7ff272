import type { Deps } from '../deps.js';
import { OAuthError, Overloaded } from '../errors.js';
import type { Route } from '../http/types.js';
import { authenticateClient } from '../clients/authenticate.js';
import { grants } from './grants/index.js';
import { NO_STORE, type Form } from './params.js';

/** POST /token: authenticate the client, look the grant up by type, check the client may use it, run it. */
export function tokenRoutes(deps: Deps): Route[] {
  const endpoint = `${deps.config.issuer}/token`;
  return [{
    method: 'POST', path: '/token', iface: 'oauth', body: 'form', bodySchema: 'form.token',
    doc: { summary: 'Token endpoint: client_credentials, token exchange (RFC 8693), refresh_token, authorization_code', tags: ['oauth'], security: 'basic', responses: { 200: 'oauth.token-response' }, errors: [400, 401, 403, 503] },
    handler: async (req) => {
      const form = req.data as Form;
      const grantType = form.grant_type as string;
      const grant = grants.get(grantType);
      // Before client authentication and any other work: a refusal under load should cost nothing.
      if (grant?.shedWhenBusy && !deps.tokens.signer.accepting()) throw new Overloaded();
      const client = await authenticateClient({ clients: deps.tokens.clients, redis: deps.redis, secretKey: deps.tokens.secretKey, issuer: deps.config.issuer, endpoint }, req, form);
      if (!grant) throw new OAuthError('unsupported_grant_type', 'The grant type is not supported.');
      if (!client.grantTypes.includes(grantType)) throw new OAuthError('unauthorized_client', 'The client may not use this grant type.');
      return { headers: NO_STORE, body: await grant.handle(deps, client, form, req) };
    },
  }];
}
