import { adminAudience } from '../admin-access.js';
import { DEFAULT_TENANT_ID } from '../bootstrap.js';
import type { HttpRequest } from '../http/request.js';
import { advertised } from '../tokens/algorithms.js';
import { DPOP_ALGS } from '../dpop/proof.js';
import type { Deps } from '../deps.js';
import type { Route } from '../http/types.js';
import type { Router } from '../http/router.js';
import { PROMPT_VALUES } from '../login/authorize/check-prompt.js';
import { grants } from './grants/index.js';

// In order of preference: clients that take the first method they support (mod_auth_openidc) get HTTP
// Basic, the spec's method for /token and /introspect; private_key_jwt is offered, not preferred, as a
// client needs a registered key for it (docs/decisions.md).
const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt'];
const ASSERTION_ALGS = ['ES256', 'PS256', 'RS256'];

/**
 * Discovery (RFC 8414, OpenID Connect Discovery) and the JWKS. The metadata is derived from the routes
 * actually mounted and the grant table, so it names every endpoint and grant the server supports and no other.
 */
export function discoveryRoutes(deps: Deps, router: () => Router): Route[] {
  const { issuer } = deps.config;
  let base: Record<string, unknown> | undefined;
  const build = () => {
    const has = (path: string) => router().routes.some((r) => r.path === path);
    const m: Record<string, unknown> = { issuer };
    if (has('/authorize')) m.authorization_endpoint = `${issuer}/authorize`;
    m.token_endpoint = `${issuer}/token`;
    m.jwks_uri = `${issuer}/.well-known/jwks.json`;
    if (has('/userinfo')) m.userinfo_endpoint = `${issuer}/userinfo`;
    m.introspection_endpoint = `${issuer}/introspect`;
    m.revocation_endpoint = `${issuer}/revoke`;
    if (has('/logout')) m.end_session_endpoint = `${issuer}/logout`;
    // RFC 8414 2 / RFC 7591 3: dynamic client registration.
    if (has('/register')) m.registration_endpoint = `${issuer}/register`;
    m.grant_types_supported = [...grants.keys()];
    // RFC 8628 4: where a device asks for its codes (the person enters the user code at /device).
    if (has('/device_authorization')) m.device_authorization_endpoint = `${issuer}/device_authorization`;
    if (has('/authorize')) {
      m.response_types_supported = ['code'];
      m.response_modes_supported = ['query'];
      m.code_challenge_methods_supported = ['S256'];
      m.subject_types_supported = ['public'];
      m.id_token_signing_alg_values_supported = [];
      m.scopes_supported = ['openid', 'email', 'offline_access'];
      m.claims_supported = ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'at_hash', 'email', 'email_verified'];
      m.prompt_values_supported = [...PROMPT_VALUES];
      // RFC 9126 5 and RFC 9101 10.1: pushed requests and signed request objects.
      m.pushed_authorization_request_endpoint = `${issuer}/par`;
      m.require_pushed_authorization_requests = false;
      m.request_parameter_supported = true;
      m.request_uri_parameter_supported = false;
      m.request_object_signing_alg_values_supported = ['ES256', 'PS256', 'RS256'];
    }
    // Public clients (auth method none) exist only for the flows with a person (code with PKCE, device); listed last.
    m.token_endpoint_auth_methods_supported = has('/authorize') ? [...AUTH_METHODS, 'none'] : AUTH_METHODS;
    m.token_endpoint_auth_signing_alg_values_supported = ASSERTION_ALGS;
    m.introspection_endpoint_auth_methods_supported = AUTH_METHODS;
    m.introspection_endpoint_auth_signing_alg_values_supported = ASSERTION_ALGS;
    // RFC 9701 7: signed introspection answers, with the server's token signing key.
    m.introspection_signing_alg_values_supported = [];
    m.revocation_endpoint_auth_methods_supported = AUTH_METHODS;
    m.revocation_endpoint_auth_signing_alg_values_supported = ASSERTION_ALGS;
    m.access_token_signing_alg_values_supported = [];
    m.authorization_response_iss_parameter_supported = has('/authorize');
    // RFC 9449 5.1: the proof algorithms /token and our resources accept.
    m.dpop_signing_alg_values_supported = [...DPOP_ALGS];
    // RFC 9728 4: svc's own protected resources (tenants' registered ones are not listed: this document is every tenant's).
    m.protected_resources = [adminAudience(issuer)];
    return m;
  };
  // One document per tenant algorithm list (and per tenant that names itself, for its jwks_uri); bounded,
  // since a tenant without keys of its own shares the deployment's list.
  const docs = new Map<string, string>();
  /**
   * One issuer serves every tenant, so `?tenant=<id>` names the tenant (as for /register and /account): its
   * signing algorithms (each under all its names, RFC 9864) and its own JWKS. Without it, the default
   * tenant's algorithms and the JWKS of every key. An unknown tenant reads as one without keys of its own.
   */
  const docFor = (named: string | undefined) => {
    const algs = deps.tokens.keys.algsOf(named ?? DEFAULT_TENANT_ID);
    const own = named !== undefined && deps.tokens.keys.hasOwnKeys(named);
    const memo = `${algs.join(',')}|${own ? named : ''}`;
    let doc = docs.get(memo);
    if (doc === undefined) {
      const m: Record<string, unknown> = { ...(base ??= build()) };
      const names = advertised(algs);
      if (m.id_token_signing_alg_values_supported) m.id_token_signing_alg_values_supported = names;
      m.introspection_signing_alg_values_supported = names;
      m.access_token_signing_alg_values_supported = names;
      if (own) m.jwks_uri = `${issuer}/.well-known/jwks.json?tenant=${encodeURIComponent(named)}`;
      doc = JSON.stringify(m);
      if (docs.size > 1000) docs.clear();
      docs.set(memo, doc);
    }
    return doc;
  };
  const meta = (req: HttpRequest) => ({ type: 'application/json', headers: { 'Cache-Control': 'public, max-age=300' }, body: docFor(req.searchParams().get('tenant') || undefined) });
  return [
    { method: 'GET', path: '/.well-known/openid-configuration', iface: 'public', doc: { summary: 'OpenID Connect discovery', tags: ['discovery'], security: 'none' }, handler: meta },
    { method: 'GET', path: '/.well-known/oauth-authorization-server', iface: 'public', doc: { summary: 'OAuth 2.0 authorization server metadata (RFC 8414)', tags: ['discovery'], security: 'none' }, handler: meta },
    {
      method: 'GET', path: '/.well-known/jwks.json', iface: 'public',
      doc: { summary: 'Public signing keys, including the next keys and retired keys still verifying live tokens; ?tenant=<id>: only the keys verifying that tenant\'s tokens', tags: ['discovery'], security: 'none' },
      handler: (req) => ({ type: 'application/json', headers: { 'Cache-Control': 'public, max-age=300' }, body: deps.tokens.keys.jwks(req.searchParams().get('tenant') || undefined) }),
    },
  ];
}
