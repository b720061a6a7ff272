import { accessTtl, refreshTtl } from '../../tenants/settings-cache.js';
import { GRANT, type Client } from '../../clients/model.js';
import type { Deps } from '../../deps.js';
import { OAuthError } from '../../errors.js';
import type { FormToken } from '../../generated/types.js';
import type { Form } from '../params.js';
import type { ReadAhead } from '../../tokens/read-ahead.js';
import { storeRefreshToken } from '../../tokens/refresh-tokens.js';
import { sha256b64url } from '../../tokens/secrets.js';
import { adminClaimsFor } from '../../tokens/user-claims.js';
import { issueIdToken } from '../id-token.js';
import { consentInput, recordFirstPartyConsent } from '../../login/consent.js';
import { scopeList } from '../params.js';
import { requestedTargets, resourcesOf, scopeForAudience, withinGrant } from '../resource-indicators.js';

/** The parameters of client authentication, which the token endpoint reads and no grant sees. */
export const CLIENT_AUTH_PARAMS = ['client_id', 'client_secret', 'client_assertion_type', 'client_assertion'] as const;

/** The parameters form.token names, without the index signature its open schema adds. */
type Named<T> = keyof { [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K] };
/** What a grant may declare: any form.token parameter but grant_type and client authentication. */
export type GrantParam = Exclude<Named<FormToken>, 'grant_type' | (typeof CLIENT_AUTH_PARAMS)[number]>;

/** Every grant module exports one of these; /token looks the grant up by grant_type and runs it. */
export interface Grant {
  type: string;
  /**
   * The parameters the grant reads. The token endpoint hands it only these, so a parameter it does
   * not declare (an RFC 6749 3.2 "unrecognised" one, or one meant for another grant) never reaches it.
   */
  params: readonly GrantParam[];
  /**
   * A one-shot issuance that is refused with 503 up front while the signing pool is behind. Grants
   * that finish a flow already under way (authorization_code, refresh_token) are always served, since
   * dropping them wastes the steps before.
   */
  shedWhenBusy?: boolean;
  /**
   * Revocation reads of presented tokens, started before client authentication so they share its Redis
   * round trip (src/tokens/read-ahead.ts); handle() receives them and uses each only for its own token.
   */
  readAhead?(deps: Deps, form: Form, failuresKey: string | undefined): ReadAhead[];
  /** `binding`: the key of the request's verified DPoP proof, which the issued tokens are bound to. */
  handle(deps: Deps, client: Client, form: Form, ahead?: ReadAhead[], binding?: Binding): Promise<Record<string, unknown>>;
}

/** The key a request proved possession of with DPoP (RFC 9449): its RFC 7638 thumbprint. */
export interface Binding { jkt: string }

/** Adds the confirmation claim (RFC 9449 6.1) that binds a token to the proof's key; returns the claims. */
export function bindTo(extra: Record<string, unknown>, binding: Binding | undefined): Record<string, unknown> {
  if (binding) extra.cnf = { jkt: binding.jkt };
  return extra;
}

/** token_type of the answer: DPoP for a bound token (RFC 9449 5), Bearer otherwise. */
export function tokenType(binding: Binding | undefined): 'DPoP' | 'Bearer' {
  return binding ? 'DPoP' : 'Bearer';
}

/** The key a presented token is bound to, if any. */
export function boundKey(claims: object): string | undefined {
  const cnf = (claims as { cnf?: { jkt?: unknown } }).cnf;
  return cnf && typeof cnf.jkt === 'string' ? cnf.jkt : undefined;
}

/**
 * The audiences a client asks for (RFC 8693 audience and resource), each of which it must be allowed.
 * Without any, a client with exactly one allowed audience gets that one, otherwise the fallback.
 * `self` (the issuer, for user sign-in grants only) may always be named: it is the audience of the
 * server's own end-user APIs (/api/user/consents), see docs/decisions.md.
 */
export function resolveTargets(client: Client, form: Form, fallback: string | null, self?: string): { aud: string[]; resource: string[] } {
  const resource = resourcesOf(form.resource);
  const wanted = requestedTargets(form);
  for (const a of wanted) {
    if (a !== self && !client.allowedAudiences.includes(a)) throw new OAuthError('invalid_target', `The client may not obtain tokens for ${JSON.stringify(a)}.`);
  }
  if (wanted.length) return { aud: wanted, resource };
  if (client.allowedAudiences.length === 1) return { aud: [client.allowedAudiences[0]!], resource };
  if (fallback) return { aud: [fallback], resource };
  throw new OAuthError('invalid_target', 'Name the audience or resource the token is for.');
}

/** Requested scopes narrowed to what every source allows; an explicit request that yields nothing is invalid_scope. */
export function narrowScope(requested: string | undefined, ...allowed: string[][]): string {
  const want = requested !== undefined ? scopeList(requested) : allowed[0] ?? [];
  let out = want;
  for (const set of allowed) out = out.filter((s) => set.includes(s));
  if (requested !== undefined && want.length > 0 && out.length === 0) throw new OAuthError('invalid_scope', 'None of the requested scopes can be granted.');
  return out.join(' ');
}

/** The access token lifetime for a client: its own, bounded by its tenant's setting (src/tenants/settings-cache.ts). */
export async function ttlFor(deps: Deps, client: Client): Promise<number> {
  const t = await deps.tokens.tenantSettings.get(client.tenantId);
  return accessTtl(deps.config.accessTokenTtlSeconds, client.accessTokenTtl, t.settings);
}

export function audClaim(aud: string[]): string | string[] {
  return aud.length === 1 ? aud[0]! : aud;
}

/** The person a grant issues for (who approved an authorization code or a device code) and what they granted. */
export interface Approval {
  userId: string; email: string; authTime: number; scope: string[]; nonce?: string;
  /** RFC 8707: the resources the authorization request named; the tokens are for these only. */
  resource?: string[] | undefined;
  /** A first-party client's implicit consent, recorded with the tokens (with the refresh token: one statement). */
  recordConsent?: boolean | undefined;
}

/** What a person's tokens were, so the grant can revoke them again (a replayed code). */
export interface IssuedForUser { accessJti: string; accessExp: number; refreshFamily?: string }

/**
 * A signed-in person's tokens for a client, the same for every grant that ends a flow with a person
 * (authorization code, device code): an access token with their claims (bound to the request's DPoP
 * proof, if any), an ID token when openid was granted, and a refresh token when the client may refresh
 * and asked for offline_access or is first-party.
 */
export async function issueForUser(deps: Deps, client: Client, a: Approval, form: Form, binding: Binding | undefined): Promise<{ body: Record<string, unknown>; issued: IssuedForUser }> {
  const scope = a.scope.join(' ');
  // RFC 8707 2.2: with resources in the authorization request, the token is for some or all of them.
  const granted = a.resource ?? [];
  const aud = granted.length ? withinGrant(requestedTargets(form), granted, granted) : resolveTargets(client, form, deps.config.issuer, deps.config.issuer).aud;
  // The access token carries only the resource's scopes; the refresh token keeps the grant's.
  const tokenScope = await scopeForAudience(deps, client.tenantId, aud, scope, false);
  const ttl = await ttlFor(deps, client);
  const admin = await adminClaimsFor(deps, client.tenantId, a.userId, audClaim(aud), tokenScope);
  const at = await deps.tokens.accessTokens.issue({
    tenant: client.tenantId, sub: a.userId, clientId: client.clientId, aud: audClaim(aud), scope: tokenScope, ttlSeconds: ttl, extra: bindTo({ auth_time: a.authTime, email: a.email, ...admin }, binding),
  }, deps.trace);
  const body: Record<string, unknown> = { access_token: at.token, token_type: tokenType(binding), expires_in: ttl, scope: tokenScope };
  // The refresh token keeps the whole grant: its default audience, and the resources it may be refreshed for.
  const grantClaims = { aud: audClaim(aud), ...(granted.length ? { resources: granted } : {}) };
  const issued: IssuedForUser = { accessJti: at.jti, accessExp: at.exp };
  const consent = a.recordConsent ? await consentInput(deps, client, a.userId, a.scope) : undefined;
  const withRefresh = client.grantTypes.includes(GRANT.refreshToken) && (a.scope.includes('offline_access') || client.firstParty);
  const [idToken, refresh] = await Promise.all([
    a.scope.includes('openid')
      ? issueIdToken(deps, { clientId: client.clientId, sub: a.userId, email: a.email, emailVerified: true, authTime: a.authTime, nonce: a.nonce, accessToken: at.token, tenant: client.tenantId, alg: client.idTokenSignedResponseAlg })
      : undefined,
    withRefresh
      ? storeRefreshToken(deps.sql, {
        tenantId: client.tenantId, clientId: client.clientId, sub: a.userId, scope, accessJti: at.jti, authTime: a.authTime * 1000,
        // A public client's refresh token is bound to the proof's key (RFC 9449 5); a confidential client's
        // is held by its authentication, and each refresh binds the new access token to that request's proof.
        claims: binding && client.authMethod === 'none' ? { ...grantClaims, cnf: { jkt: binding.jkt } } : grantClaims, ttlSeconds: refreshTtl(deps.config.refreshTokenTtlSeconds, client.refreshTokenTtl, (await deps.tokens.tenantSettings.get(client.tenantId)).settings), generation: deps.tokens.sharding.current(client.clientId),
        ...(consent ? { consent: { userId: consent.userId, clientId: consent.clientId, scopes: consent.scopes, expiresAt: consent.expiresAt, policy: consent.policy } } : {}),
      })
      : undefined,
    consent && !withRefresh ? recordFirstPartyConsent(deps, client, a.userId, a.scope) : undefined,
  ]);
  if (refresh) { body.refresh_token = refresh; issued.refreshFamily = sha256b64url(refresh); }
  if (idToken) body.id_token = idToken;
  return { body, issued };
}
