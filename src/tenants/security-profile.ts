import type { Client } from '../clients/model.js';
import type { AdminTenantSettings } from '../generated/types.js';

/** What a client's requests must do, from its own registration, its tenant's settings and security profile. */
export interface Requirements {
  /** /authorize takes only pushed requests (RFC 9126). */
  par: boolean;
  /** A code_challenge (S256) on every authorization request. */
  pkce: boolean;
  /** A DPoP proof on every token request (RFC 9449). */
  dpop: boolean;
  /** Client authentication by private_key_jwt only (FAPI 2.0 5.3.2.1; mTLS is not offered). */
  privateKeyJwt: boolean;
}

/**
 * The FAPI 2.0 Security Profile (docs/fapi.md) is a tenant switch; the rest are per client or per
 * tenant. The profile's other rules hold for every tenant already: iss in the authorization response
 * (RFC 9207), codes live 60 s, redirect URIs match exactly, S256 is the only PKCE method.
 */
export function requirementsFor(client: Client, settings: AdminTenantSettings): Requirements {
  const fapi = settings.security_profile === 'fapi2_security';
  return {
    par: fapi || client.requirePushedAuthorizationRequests || settings.require_pushed_authorization_requests === true,
    pkce: fapi || client.authMethod === 'none',
    dpop: fapi || client.dpopBoundAccessTokens || settings.require_dpop === true,
    privateKeyJwt: fapi,
  };
}
