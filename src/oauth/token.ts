import { servingStatus } from '../tenants/settings-cache.js';
import { DpopAtEndpoint } from '../dpop/token-request.js';
import { requirementsFor } from '../tenants/security-profile.js';
import type { Deps } from '../deps.js';
import { OAuthError, Overloaded } from '../errors.js';
import type { FormToken } from '../generated/types.js';
import { route } from '../http/route.js';
import type { Route } from '../http/types.js';
import { authenticateClient, claimedClientId, clientAuthContext, failureBudgetKey, proofClaimant } from '../clients/authenticate.js';
import { CLIENT_AUTH_PARAMS, type Grant } from './grants/grant.js';
import { grants } from './grants/index.js';
import { NO_STORE, type Form } from './params.js';
import { depsFor } from '../request-deps.js';

/** The named parameters of the request, and only those: what the token endpoint (and /par) passes on. */
export function pick<F extends object>(form: F, names: readonly (keyof F & string)[]): Form {
  const out: Form = {};
  for (const n of names) {
    const v: unknown = form[n];
    if (typeof v === 'string' || Array.isArray(v)) out[n] = v;
  }
  return out;
}

/** The parameters a grant declares; whatever else the client sent stays here. */
export function grantInput(grant: Pick<Grant, 'params'>, form: FormToken): Form {
  return pick(form, grant.params);
}

/** POST /token: authenticate the client, look the grant up by type, check the client may use it, run it. */
export function tokenRoutes(base: Deps): Route[] {
  const authCtx = clientAuthContext(base, `${base.config.issuer}/token`);
  const dpop = new DpopAtEndpoint(base.redis, base.config.keyEncryptionKey, `${base.config.issuer}/token`);
  return [route({
    method: 'POST', path: '/token', iface: 'oauth', body: 'form', bodySchema: 'form.token',
    doc: { summary: 'Token endpoint: client_credentials, token exchange (RFC 8693), refresh_token, authorization_code, device_code (RFC 8628)', tags: ['oauth'], security: 'basic', responses: { 200: 'oauth.token-response' }, errors: [400, 401, 403, 503] },
    handler: async ({ req, body }) => {
      // A sampled request's view (its clients make spans under it); the process's deps otherwise.
      const deps = depsFor(base, req);
      const grant = grants.get(body.grant_type);
      const signer = deps.tokens.signer;
      // Before anything is spent (a code, a refresh token): a process that cannot sign says so at once.
      deps.tokens.keys.assertCanSign();
      // Before client authentication and any other work: a refusal under load should cost nothing.
      const admitted = grant?.shedWhenBusy === true;
      if (admitted && !signer.admit()) throw new Overloaded(undefined, 'crypto_queue');
      try {
        const auth = pick(body, CLIENT_AUTH_PARAMS);
        const claimed = grant?.readAhead ? claimedClientId(req, auth) : undefined;
        const ahead = grant?.readAhead?.(deps, grantInput(grant, body), claimed === undefined ? undefined : failureBudgetKey(claimed, req.ip));
        // In the same tick as the read above: the proof's replay write shares its Redis round trip.
        const proof = dpop.start(req, () => proofClaimant(req, auth));
        const client = await authenticateClient(authCtx, req, auth, ahead?.[0]?.failures);
        if (!grant) throw new OAuthError('unsupported_grant_type', 'The grant type is not supported.');
        if (!client.grantTypes.includes(body.grant_type)) throw new OAuthError('unauthorized_client', 'The client may not use this grant type.');
        // No new tokens for a suspended (or deleting) tenant: a resource server that verifies JWTs itself
        // would otherwise accept them. Read from the per-process cache, evicted by pub/sub on suspend.
        const tenant = await deps.tokens.tenantSettings.get(client.tenantId);
        if (!servingStatus(tenant.status)) throw new OAuthError('unauthorized_client', "The client's tenant is suspended.");
        const need = requirementsFor(client, tenant.settings);
        if (need.privateKeyJwt && client.authMethod !== 'private_key_jwt') throw new OAuthError('invalid_client', 'This tenant\'s security profile (FAPI 2.0) requires private_key_jwt client authentication.');
        try {
          const binding = await dpop.finish(proof, client, tenant, need.dpop);
          const issued = await grant.handle(deps, client, grantInput(grant, body), ahead, binding);
          deps.logs?.tokenDecision(client.tenantId, { decision: 'issue', client_id: client.clientId, grant_type: body.grant_type, issued: true });
          const nonce = binding && dpop.nonceFor(client, tenant);
          return { headers: nonce ? { ...NO_STORE, 'DPoP-Nonce': nonce } : NO_STORE, body: issued };
        } catch (err) {
          if (err instanceof OAuthError) deps.logs?.tokenDecision(client.tenantId, { decision: 'issue', client_id: client.clientId, grant_type: body.grant_type, issued: false, error: err.code });
          throw err;
        }
      } finally {
        if (admitted) signer.release();
      }
    },
  })];
}
