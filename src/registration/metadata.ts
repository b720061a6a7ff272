import { metadataProblems, redirectUriProblem } from '../clients/metadata.js';
import { GRANT, type Client } from '../clients/model.js';
import { OAuthError, ValidationError } from '../errors.js';
import type { OauthClientRegistration } from '../generated/types.js';
import { validate, validatorFor } from '../http/validate.js';
import type { ClientRow } from '../store/clients.js';
import type { RegistrationPolicyRow } from '../store/registrations.js';
import type { SigningAlg } from '../tokens/algorithms.js';

/** The client fields a registration sets; everything else keeps the defaults of an admin-created client. */
export interface RegisteredFields {
  name: string; authMethod: Client['authMethod']; grantTypes: string[]; scopes: string[]; redirectUris: string[]; postLogoutRedirectUris: string[];
  allowedAudiences: string[]; jwks: Client['jwks']; dpopBoundAccessTokens: boolean; requirePushedAuthorizationRequests: boolean;
  introspectionSignedResponseAlg: string | null;
  idTokenSignedResponseAlg: string | null;
  /** Informative metadata svc keeps only to answer it back (RFC 7591 3.2.1: all registered metadata). */
  echo: Record<string, unknown>;
}

const ECHOED = ['software_id', 'software_version', 'client_uri', 'logo_uri', 'tos_uri', 'policy_uri', 'contacts', 'software_statement'] as const;
const DEFAULT_NAME = 'Dynamically registered client';
const PUBLIC_GRANTS: ReadonlySet<string> = new Set([GRANT.authorizationCode, GRANT.refreshToken, GRANT.deviceCode]);

/**
 * RFC 7591 3.2.2: a schema violation of the metadata is invalid_redirect_uri when it is in a redirect URI,
 * else invalid_client_metadata, with the field-keyed details in the description.
 */
export function registrationBodyError(err: ValidationError): OAuthError {
  const fields = Object.keys(err.details ?? {});
  const text = fields.map((f) => `${f} ${err.details![f]!.join(', ')}`).join('; ');
  return new OAuthError(fields.some((f) => f.startsWith('redirect_uris')) ? 'invalid_redirect_uri' : 'invalid_client_metadata', text || 'The client metadata is not valid.');
}

/** The request with a software statement's claims applied over it, validated again (the claims are metadata too). */
export function withStatement(body: OauthClientRegistration, claims: Record<string, unknown>): OauthClientRegistration {
  const merged = { ...body, ...claims } as Record<string, unknown>;
  try {
    validate(validatorFor('oauth.client-registration'), merged);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    throw new OAuthError('invalid_software_statement', `The software statement's metadata is not valid: ${registrationBodyError(err).message}`);
  }
  return merged as OauthClientRegistration;
}

const meta = (description: string) => new OAuthError('invalid_client_metadata', description);
const notAllowed = (values: readonly string[], allowed: readonly string[]) => values.filter((v) => !allowed.includes(v));

/**
 * The client a registration asks for, held to the tenant's policy and to the rules every client meets
 * (src/clients/metadata.ts, the admin API's too). Defaults follow RFC 7591 2: grant type
 * authorization_code, response type code, client_secret_basic; scope and audiences the policy's.
 */
export function registeredFields(m: OauthClientRegistration, policy: RegistrationPolicyRow, tenantAlgs: readonly SigningAlg[]): RegisteredFields {
  if (m.jwks_uri !== undefined) throw meta('jwks_uri is not supported: send the public keys as jwks.');
  const grantTypes: string[] = m.grant_types ?? [GRANT.authorizationCode];
  const refused = notAllowed(grantTypes, policy.allowed_grant_types);
  if (refused.length) throw meta(`grant_types not allowed in this tenant: ${refused.join(', ')}.`);
  const code = grantTypes.includes(GRANT.authorizationCode);
  // RFC 7591 2.1: response types and grant types must agree; svc answers only `code`.
  const responseTypes: string[] = m.response_types ?? (code ? ['code'] : []);
  if (responseTypes.some((r) => r !== 'code')) throw meta('response_types may only be code.');
  if (code !== responseTypes.includes('code')) throw meta('response_types code goes with the authorization_code grant type, and only with it.');
  const authMethod = m.token_endpoint_auth_method ?? 'client_secret_basic';
  if (!policy.allowed_auth_methods.includes(authMethod)) throw meta(`token_endpoint_auth_method ${authMethod} is not allowed in this tenant.`);
  // Public clients are for people's devices: the authorization code flow (with PKCE) and the device flow.
  if (authMethod === 'none' && grantTypes.some((g) => !PUBLIC_GRANTS.has(g))) throw meta('A public client (token_endpoint_auth_method none) may only use authorization_code, refresh_token and device_code.');
  const redirectUris = m.redirect_uris ?? [];
  if (code && redirectUris.length === 0) throw new OAuthError('invalid_redirect_uri', 'redirect_uris is required for the authorization_code grant type.');
  for (const uri of redirectUris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new OAuthError('invalid_redirect_uri', `Redirect URI ${JSON.stringify(uri)} ${problem}.`);
  }
  const postLogoutRedirectUris = m.post_logout_redirect_uris ?? [];
  for (const uri of postLogoutRedirectUris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw meta(`post_logout_redirect_uris ${JSON.stringify(uri)} ${problem}.`);
  }
  const scopes = m.scope === undefined ? [...policy.allowed_scopes] : [...new Set(m.scope.split(' '))];
  const badScopes = notAllowed(scopes, policy.allowed_scopes);
  if (badScopes.length) throw meta(`scope not allowed in this tenant: ${badScopes.join(' ')}.`);
  const allowedAudiences = m.allowed_audiences ?? [...policy.allowed_audiences];
  const badAudiences = notAllowed(allowedAudiences, policy.allowed_audiences);
  if (badAudiences.length) throw meta(`allowed_audiences not allowed in this tenant: ${badAudiences.join(', ')}.`);
  const jwks = (m.jwks ?? null) as Client['jwks'];
  const problems = metadataProblems({ authMethod, jwks, introspectionSignedResponseAlg: m.introspection_signed_response_alg ?? null, idTokenSignedResponseAlg: m.id_token_signed_response_alg ?? null }, tenantAlgs);
  const first = Object.entries(problems)[0];
  if (first) throw meta(`${first[0]} ${first[1].join(', ')}.`);
  const echo: Record<string, unknown> = {};
  for (const k of ECHOED) if (m[k] !== undefined) echo[k] = m[k];
  return {
    name: m.client_name ?? DEFAULT_NAME, authMethod, grantTypes, scopes, redirectUris, postLogoutRedirectUris, allowedAudiences, jwks,
    dpopBoundAccessTokens: m.dpop_bound_access_tokens ?? false, requirePushedAuthorizationRequests: m.require_pushed_authorization_requests ?? false,
    introspectionSignedResponseAlg: m.introspection_signed_response_alg ?? null, idTokenSignedResponseAlg: m.id_token_signed_response_alg ?? null, echo,
  };
}

/** Whether a client of this method authenticates with a secret (and so is issued one). */
export function usesSecret(method: Client['authMethod']): boolean {
  return method === 'client_secret_basic' || method === 'client_secret_post';
}

/**
 * A registered client as RFC 7591 3.2.1 / RFC 7592 2.1 answer it: its metadata, the management URI, and
 * client_secret_expires_at whenever it has a secret (secrets do not expire: 0).
 */
export function registrationView(c: ClientRow, echo: Record<string, unknown>, registrationClientUri: string): Record<string, unknown> {
  const code = c.grant_types.includes(GRANT.authorizationCode);
  return {
    client_id: c.client_id, client_id_issued_at: Math.floor(Number(c.created_at) / 1000),
    ...(usesSecret(c.token_endpoint_auth_method) ? { client_secret_expires_at: 0 } : {}),
    client_name: c.name, redirect_uris: c.redirect_uris, post_logout_redirect_uris: c.post_logout_redirect_uris, grant_types: c.grant_types,
    response_types: code ? ['code'] : [], token_endpoint_auth_method: c.token_endpoint_auth_method, scope: c.scopes.join(' '),
    allowed_audiences: c.allowed_audiences, dpop_bound_access_tokens: c.dpop_bound_access_tokens,
    require_pushed_authorization_requests: c.require_pushed_authorization_requests,
    ...(c.jwks ? { jwks: c.jwks } : {}), ...(c.introspection_signed_response_alg ? { introspection_signed_response_alg: c.introspection_signed_response_alg } : {}),
    ...(c.id_token_signed_response_alg ? { id_token_signed_response_alg: c.id_token_signed_response_alg } : {}),
    ...echo, registration_client_uri: registrationClientUri,
  };
}
