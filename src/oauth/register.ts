import { auditedChange, type Actor } from '../admin/route.js';
import { clientView } from '../admin/clients.js';
import { DEFAULT_TENANT_ID } from '../bootstrap.js';
import { createClient } from '../clients/create.js';
import type { Deps } from '../deps.js';
import { AppError, OAuthError } from '../errors.js';
import type { OauthClientRegistration } from '../generated/types.js';
import { bearerToken } from '../http/bearer.js';
import type { HttpRequest } from '../http/request.js';
import { route } from '../http/route.js';
import type { Route } from '../http/types.js';
import { presentedToken, tokenState } from '../registration/initial-access-tokens.js';
import { registeredFields, registrationBodyError, registrationView, withStatement, type RegisteredFields } from '../registration/metadata.js';
import { effectivePolicy } from '../registration/policy.js';
import { verifySoftwareStatement } from '../registration/software-statement.js';
import { findClientForAuthentication, findRegistrationForManagement } from '../cross-tenant/credentials.js';
import { randomToken } from '../store/ids.js';
import { hitLimits } from '../store/rate-limit.js';
import { redisKeys } from '../store/redis-keys.js';
import { type ClientRegistrationRow, type InitialAccessTokenRow, type RegistrationPolicyRow, type RegistrationRepository } from '../store/registrations.js';
import { servingStatus } from '../tenants/settings-cache.js';
import { hashSecret, secretMatches } from '../tokens/secrets.js';
import { NO_STORE } from './params.js';
import { depsFor } from '../request-deps.js';

const MAX_ACCESS_TTL = 86_400;
/** Fields of an RFC 7592 answer that a client may not send back in its update (RFC 7592 2.2). */
const SERVER_FIELDS = ['registration_access_token', 'registration_client_uri', 'client_secret_expires_at', 'client_id_issued_at'];

/** RFC 6750 3.1: a missing or bad bearer credential (initial or registration access token). */
const invalidToken = (description: string) => new AppError(401, 'invalid_token', description, { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } });

interface Registrant { tenantId: string; policy: RegistrationPolicyRow; token: InitialAccessTokenRow | null }

/**
 * Dynamic client registration (RFC 7591) at POST /register and its management (RFC 7592) at
 * /register/{client_id} with the registration access token. A registered client is a normal client of
 * its tenant (admin API, tokens, audit), marked registered_dynamically; the tenant's policy
 * (src/admin/registration.ts) says who may register what.
 */
export function registrationRoutes(base: Deps): Route[] {
  const { issuer } = base.config;
  const key = base.tokens.secretKey;
  const uriOf = (clientId: string) => `${issuer}/register/${encodeURIComponent(clientId)}`;
  const registrants = new WeakMap<HttpRequest, Registrant>();
  const managed = new WeakMap<HttpRequest, ClientRegistrationRow>();

  // Helpers that read or write take the request's deps (depsFor), so a sampled request's Postgres and
  // Redis spans are made under its server span.

  /** Refuses a suspended or deleted tenant's registrations and management. */
  const assertServing = async (deps: Deps, tenantId: string) => {
    if (!servingStatus((await deps.tokens.tenantSettings.get(tenantId)).status)) throw new OAuthError('access_denied', 'The tenant is suspended.', 403);
  };

  /**
   * Which tenant a registration lands in (docs/decisions.md): an initial access token's own; without
   * one, the tenant `?tenant=` names (as /account does), else the default tenant, which must have
   * opened registration.
   */
  const registrant = async (deps: Deps, req: HttpRequest): Promise<Registrant> => {
    const named = req.searchParams().get('tenant') || undefined;
    if (req.headers.authorization !== undefined) {
      const value = bearerToken(req);
      const token = value ? await presentedToken(deps.sql, key, value) : null;
      if (!token || tokenState(token) !== 'active') throw invalidToken('The initial access token is invalid, expired, revoked or used up.');
      if (named !== undefined && named !== token.tenant_id) throw new OAuthError('invalid_request', 'The initial access token belongs to another tenant than ?tenant= names.');
      return { tenantId: token.tenant_id, token, policy: effectivePolicy(token.tenant_id, await deps.store.forTenant(token.tenant_id).registrations.policy()) };
    }
    const tenantId = named ?? DEFAULT_TENANT_ID;
    const policy = effectivePolicy(tenantId, await deps.store.forTenant(tenantId).registrations.policy());
    if (!policy.open_registration) throw invalidToken('An initial access token is required to register a client here.');
    return { tenantId, token: null, policy };
  };

  /** The request's metadata with a software statement applied (its claims win), held to the policy. */
  const fieldsOf = async (tenantId: string, repo: RegistrationRepository, body: OauthClientRegistration, policy: RegistrationPolicyRow): Promise<{ fields: RegisteredFields; issuer: string | null }> => {
    let metadata = body;
    let issuerOfStatement: string | null = null;
    if (body.software_statement !== undefined) {
      const { issuer: iss, claims } = await verifySoftwareStatement(repo, body.software_statement);
      metadata = withStatement(body, claims);
      issuerOfStatement = iss;
    } else if (policy.require_software_statement) {
      throw new OAuthError('invalid_software_statement', 'This tenant registers clients only with a software statement of a trusted issuer.');
    }
    return { fields: registeredFields(metadata, policy, base.tokens.keys.algsOf(tenantId)), issuer: issuerOfStatement };
  };

  /** After the commit: every process forgets its cached copy; a deleted client also loses its access tokens. */
  const announce = async (deps: Deps, tenantId: string, clientId: string, cutOff: boolean) => {
    await deps.tokens.clients.changed(clientId, deps.trace);
    if (cutOff) await deps.tokens.revocations.revokeBefore(tenantId, 'client', clientId, Date.now(), MAX_ACCESS_TTL, deps.trace);
  };

  const managedBy = (req: HttpRequest): { reg: ClientRegistrationRow; actor: Actor } => {
    const reg = managed.get(req)!;
    return { reg, actor: { tenantId: reg.tenant_id, actor: { type: 'machine', id: reg.client_id, displayName: 'Client managing its registration (RFC 7592)', email: null } } };
  };

  const manage = {
    iface: 'oauth' as const,
    /** RFC 7592 2: the registration access token for exactly this client, compared in constant time. */
    authenticate: async (req: HttpRequest) => {
      const deps = depsFor(base, req);
      const value = bearerToken(req);
      const reg = value ? await findRegistrationForManagement(deps.sql, req.params.clientId!) : null;
      if (!value || !secretMatches(key, value, reg?.token_hash ?? null) || !reg) throw invalidToken('The registration access token is invalid for this client.');
      await assertServing(deps, reg.tenant_id);
      managed.set(req, reg);
    },
  };

  return [
    route({
      method: 'POST', path: '/register', iface: 'oauth', body: 'json', bodySchema: 'oauth.client-registration', bodyError: registrationBodyError,
      doc: {
        summary: 'Dynamic client registration (RFC 7591): with an initial access token (Bearer), or openly where the tenant allows it (?tenant=); the secret and the registration access token are in this response only',
        tags: ['oauth'], security: 'bearer', responses: { 201: 'oauth.client-registration-response' }, errors: [400, 401, 403, 429, 503],
      },
      authenticate: async (req) => {
        const deps = depsFor(base, req);
        const r = await registrant(deps, req);
        await assertServing(deps, r.tenantId);
        // Per source address and tenant, before the body is read (src/store/rate-limit.ts; 429 with Retry-After).
        await hitLimits(deps.redis, [{ key: redisKeys.registrationRate(r.tenantId, req.ip), limit: r.policy.rate_limit_per_minute, windowMs: 60_000 }], 'Too many client registrations from this address; retry later.');
        registrants.set(req, r);
      },
      handler: async ({ req, body }) => {
        const deps = depsFor(base, req);
        const { tenantId, policy, token } = registrants.get(req)!;
        const repo = deps.store.forTenant(tenantId).registrations;
        const { fields, issuer: iss } = await fieldsOf(tenantId, repo, body, policy);
        const actor: Actor = { tenantId, actor: { type: 'machine', id: token ? `initial-access-token:${token.id}` : 'open-registration', displayName: 'Dynamic client registration (RFC 7591)', email: null } };
        const out = await auditedChange(deps, actor, req, { action: 'client.create', resourceType: 'client' }, async (tx, store) => {
          // The use is spent with the client, in one transaction: the last use cannot register two clients.
          if (token && !(await store.registrations.spendToken(token.id))) throw invalidToken('The initial access token is invalid, expired, revoked or used up.');
          await store.registrations.lockForRegistration();
          if (await store.registrations.countRegistered() >= policy.max_clients) throw new OAuthError('access_denied', 'This tenant holds as many dynamically registered clients as it allows.', 403);
          const { client, clientSecret } = await createClient(tx, key, {
            tenantId, name: fields.name, authMethod: fields.authMethod, grantTypes: fields.grantTypes, scopes: fields.scopes, redirectUris: fields.redirectUris,
            postLogoutRedirectUris: fields.postLogoutRedirectUris, allowedAudiences: fields.allowedAudiences, jwks: fields.jwks,
            dpopBoundAccessTokens: fields.dpopBoundAccessTokens, requirePushedAuthorizationRequests: fields.requirePushedAuthorizationRequests,
            introspectionSignedResponseAlg: fields.introspectionSignedResponseAlg, idTokenSignedResponseAlg: fields.idTokenSignedResponseAlg, registeredDynamically: true,
          });
          const registrationToken = randomToken(32);
          await store.registrations.insertRegistration({ clientId: client.clientId, tokenHash: hashSecret(key, registrationToken), metadata: fields.echo, initialAccessTokenId: token?.id ?? null, issuer: iss });
          const row = (await store.clients.get(client.clientId))!;
          return {
            result: { row, clientSecret, registrationToken }, resourceId: client.clientId, after: clientView(row),
            metadata: { initial_access_token_id: token?.id ?? null, software_statement_issuer: iss },
          };
        });
        await announce(deps, tenantId, out.row.client_id, false); // evicts a cached "no such client"
        return {
          status: 201, headers: NO_STORE,
          body: { ...registrationView(out.row, fields.echo, uriOf(out.row.client_id)), ...(out.clientSecret ? { client_secret: out.clientSecret } : {}), registration_access_token: out.registrationToken },
        };
      },
    }),
    route({
      method: 'GET', path: '/register/:clientId', ...manage,
      doc: { summary: 'Read a dynamically registered client (RFC 7592 2.1) with its registration access token', tags: ['oauth'], security: 'bearer', responses: { 200: 'oauth.client-registration-response' }, errors: [401, 403] },
      handler: async ({ req }) => {
        const deps = depsFor(base, req);
        const { reg } = managedBy(req);
        const row = await deps.store.forTenant(reg.tenant_id).clients.get(reg.client_id);
        if (!row) throw invalidToken('The registration access token is invalid for this client.');
        return { headers: NO_STORE, body: registrationView(row, reg.metadata, uriOf(row.client_id)) };
      },
    }),
    route({
      method: 'PUT', path: '/register/:clientId', ...manage, body: 'json', bodySchema: 'oauth.client-registration', bodyError: registrationBodyError,
      doc: {
        summary: 'Replace a dynamically registered client\'s metadata as a whole (RFC 7592 2.2); answers a new registration access token (the old one stops working)',
        tags: ['oauth'], security: 'bearer', responses: { 200: 'oauth.client-registration-response' }, errors: [400, 401, 403],
      },
      handler: async ({ req, body }) => {
        const deps = depsFor(base, req);
        const { reg, actor } = managedBy(req);
        const sent = req.data as Record<string, unknown>;
        const extra = SERVER_FIELDS.filter((f) => f in sent);
        if (extra.length) throw new OAuthError('invalid_request', `An update must not carry ${extra.join(', ')} (RFC 7592 2.2).`);
        if (body.client_id !== reg.client_id) throw new OAuthError('invalid_request', 'An update must carry the client_id of the client it updates (RFC 7592 2.2).');
        if (body.client_secret !== undefined) {
          const current = await findClientForAuthentication(deps.sql, reg.client_id);
          if (!secretMatches(key, body.client_secret, current?.secretHash ?? null)) throw new OAuthError('invalid_client_metadata', 'client_secret is not the client\'s current secret.');
        }
        const store = deps.store.forTenant(reg.tenant_id);
        const policy = effectivePolicy(reg.tenant_id, await store.registrations.policy());
        const { fields, issuer: iss } = await fieldsOf(reg.tenant_id, store.registrations, body, policy);
        const out = await auditedChange(deps, actor, req, { action: 'client.update', resourceType: 'client', resourceId: reg.client_id }, async (_tx, s) => {
          const cur = await s.clients.get(reg.client_id, true);
          if (!cur) throw invalidToken('The registration access token is invalid for this client.');
          // The method decides whether the client holds a secret; changing it would issue or strand one.
          if (fields.authMethod !== cur.token_endpoint_auth_method) throw new OAuthError('invalid_client_metadata', 'token_endpoint_auth_method cannot be changed; register a new client instead.');
          const next = (await s.clients.update(reg.client_id, {
            name: fields.name, grant_types: fields.grantTypes, scopes: fields.scopes, redirect_uris: fields.redirectUris, post_logout_redirect_uris: fields.postLogoutRedirectUris,
            allowed_audiences: fields.allowedAudiences, jwks: fields.jwks, dpop_bound_access_tokens: fields.dpopBoundAccessTokens,
            require_pushed_authorization_requests: fields.requirePushedAuthorizationRequests, introspection_signed_response_alg: fields.introspectionSignedResponseAlg,
            id_token_signed_response_alg: fields.idTokenSignedResponseAlg,
          }))!;
          const registrationToken = randomToken(32);
          await s.registrations.updateRegistration(reg.client_id, hashSecret(key, registrationToken), fields.echo, iss);
          return { result: { row: next, registrationToken }, before: clientView(cur), after: clientView(next) };
        });
        await announce(deps, reg.tenant_id, reg.client_id, false);
        return { headers: NO_STORE, body: { ...registrationView(out.row, fields.echo, uriOf(reg.client_id)), registration_access_token: out.registrationToken } };
      },
    }),
    route({
      method: 'DELETE', path: '/register/:clientId', ...manage,
      doc: { summary: 'Delete a dynamically registered client (RFC 7592 2.3): everything issued to it is revoked, and its registration access token stops working', tags: ['oauth'], security: 'bearer', responses: { 204: null }, errors: [401, 403] },
      handler: async ({ req }) => {
        const deps = depsFor(base, req);
        const { reg, actor } = managedBy(req);
        await auditedChange(deps, actor, req, { action: 'client.delete', resourceType: 'client', resourceId: reg.client_id, severity: 'warn' }, async (_tx, s) => {
          await s.clients.revokeRefreshTokens(reg.client_id);
          const row = await s.clients.delete(reg.client_id);
          if (!row) throw invalidToken('The registration access token is invalid for this client.');
          return { result: null, before: clientView(row) };
        });
        await announce(deps, reg.tenant_id, reg.client_id, true);
        return { status: 204 };
      },
    }),
  ];
}
