import { GRANT } from '../../clients/model.js';
import type { Deps } from '../../deps.js';
import { OAuthError } from '../../errors.js';
import { JwtError, type JwtPayload } from '../../tokens/jwt.js';
import { aheadFor, readAhead, type ReadAhead } from '../../tokens/read-ahead.js';
import { lineageOf, MAX_LINEAGE, revocationSubject, type Ancestor } from '../../tokens/revocation.js';
import { one, required } from '../params.js';
import { scopeForAudience } from '../resource-indicators.js';
import { exchangeElevation } from './elevation-exchange.js';
import { audClaim, bindTo, boundKey, narrowScope, resolveTargets, tokenType, ttlFor, type Binding, type Grant } from './grant.js';

export const TOKEN_TYPE = {
  accessToken: 'urn:ietf:params:oauth:token-type:access_token',
  jwt: 'urn:ietf:params:oauth:token-type:jwt',
  refreshToken: 'urn:ietf:params:oauth:token-type:refresh_token',
  elevationGrant: 'urn:svc:params:oauth:token-type:elevation-grant',
} as const;

const SUBJECT_TYPES = new Set<string>([TOKEN_TYPE.accessToken, TOKEN_TYPE.jwt]);

/**
 * Verifies a token presented to the exchange: signature with our keys, expiry, tenant, and revocation
 * (which fails closed with 503 when Redis cannot answer). Failures are invalid_grant (400), per the spec.
 */
export async function verifyPresentedToken(deps: Deps, token: string, tenant: string, what: 'subject' | 'actor', ahead?: ReadAhead[]): Promise<JwtPayload> {
  let payload: JwtPayload;
  // The read started before client authentication decoded this same token string: its claims, and the
  // keys it read for them, are this token's.
  const read = aheadFor(ahead, token);
  try {
    payload = await deps.tokens.accessTokens.verifyAsync(token, read?.claims, deps.trace);
  } catch (err) {
    if (err instanceof JwtError) {
      const why = err.reason === 'expired' ? 'has expired' : err.reason === 'signature' || err.reason === 'unknown_key' || err.reason === 'algorithm' ? 'has an invalid signature' : 'is not a valid access token';
      throw new OAuthError('invalid_grant', `The ${what} token ${why}.`);
    }
    throw err;
  }
  if (payload.tenant !== tenant) throw new OAuthError('invalid_grant', `The ${what} token belongs to another tenant.`);
  const state = await (read?.state ?? deps.tokens.revocations.lookup(revocationSubject(payload, tenant), undefined, deps.trace));
  if (state.tenantRefused) throw new OAuthError('invalid_grant', `The ${what} token's tenant is suspended.`);
  if (state.revoked) throw new OAuthError('invalid_grant', `The ${what} token has been revoked.`);
  return payload;
}

/**
 * The ancestors a token exchanged from `subject` carries (src/tokens/revocation.ts): the subject and its
 * own ancestors, so revoking any of them ends the new token too. A tenant may turn that off for
 * ordinary tokens (`revoke_exchanged_tokens: false`); a token descended from an elevation grant keeps
 * its lineage whatever the setting, or closing the grant would not reach it.
 */
function lineageFor(subject: JwtPayload, cascade: boolean): Ancestor[] {
  const inherited = subject.lineage === undefined ? [] : lineageOf(subject.lineage);
  if (!cascade && subject.elevation === undefined) return [];
  const out = [{ jti: String(subject.jti), client_id: String(subject.client_id ?? '') }, ...inherited];
  if (out.length > MAX_LINEAGE) throw new OAuthError('invalid_grant', `The subject token was exchanged too many times already (at most ${MAX_LINEAGE} exchanges in a chain).`);
  return out;
}

/**
 * An access token from an elevation grant is exchanged again only when its grant says so, and then only
 * for the grant's own audience, keeping what makes it an elevation (sub, act, authorization_details).
 */
function reexchangeOfElevated(subject: JwtPayload, aud: string[]): Record<string, unknown> {
  const e = subject.elevation as { reexchange?: unknown } | null;
  if (e === null || typeof e !== 'object' || e.reexchange !== true) throw new OAuthError('invalid_grant', 'An elevated access token is not exchangeable again unless its approval request allows it.');
  const grantAud = Array.isArray(subject.aud) ? subject.aud : [subject.aud];
  if (aud.some((a) => !grantAud.includes(a))) throw new OAuthError('invalid_target', 'An elevated access token is exchanged for its grant\'s audience only.');
  return { elevation: subject.elevation, authorization_details: subject.authorization_details };
}

/**
 * A DPoP-bound token (cnf.jkt) is exchanged only by a request that carries a DPoP proof: the new token is
 * bound to the proof's key, so an exchange never turns a sender-constrained token into a bearer one
 * (docs/decisions.md). The proof may be another key's: an exchanging service binds what it gets to its own.
 */
function requireProofForBound(token: JwtPayload, binding: Binding | undefined, what: 'subject' | 'actor'): void {
  if (boundKey(token) !== undefined && !binding) throw new OAuthError('invalid_dpop_proof', `The ${what} token is DPoP-bound: exchange it with a DPoP proof.`);
}

/** RFC 8693 token exchange: validate subject (and actor), intersect scope, issue for the requested audience. */
export const tokenExchange: Grant = {
  type: GRANT.tokenExchange,
  params: ['subject_token', 'subject_token_type', 'actor_token', 'actor_token_type', 'requested_token_type', 'scope', 'audience', 'resource'],
  shedWhenBusy: true,
  readAhead(deps, form, failuresKey) {
    const out: ReadAhead[] = [];
    // The client's failure budget rides with the subject token's read.
    const subject = readAhead(deps.tokens.revocations, form.subject_token, { failuresKey, trace: deps.trace });
    if (subject) out.push(subject);
    const actor = readAhead(deps.tokens.revocations, form.actor_token, { trace: deps.trace });
    if (actor) out.push(actor);
    return out;
  },
  async handle(deps, client, form, ahead, binding) {
    const subjectToken = required(form, 'subject_token');
    const subjectType = required(form, 'subject_token_type');
    const { settings } = await deps.tokens.tenantSettings.get(client.tenantId);
    if (settings.token_exchange_enabled === false) throw new OAuthError('unauthorized_client', 'Token exchange is disabled for this tenant.');
    if (settings.allowed_subject_token_types && !(settings.allowed_subject_token_types as string[]).includes(subjectType)) {
      throw new OAuthError('invalid_request', 'This subject_token_type is not allowed in this tenant.');
    }
    if (subjectType === TOKEN_TYPE.elevationGrant) return exchangeElevation(deps, client, form, binding);
    if (!SUBJECT_TYPES.has(subjectType)) throw new OAuthError('invalid_request', 'Unsupported subject_token_type.');
    const requestedType = one(form, 'requested_token_type') ?? TOKEN_TYPE.accessToken;
    if (requestedType !== TOKEN_TYPE.accessToken && requestedType !== TOKEN_TYPE.jwt) throw new OAuthError('invalid_request', 'Unsupported requested_token_type.');
    const actorToken = one(form, 'actor_token');
    const actorType = one(form, 'actor_token_type');
    if (actorToken !== undefined && (actorType === undefined || !SUBJECT_TYPES.has(actorType))) throw new OAuthError('invalid_request', 'actor_token_type is required with actor_token and must be an access token type.');
    if (actorToken === undefined && actorType !== undefined) throw new OAuthError('invalid_request', 'actor_token_type without actor_token.');
    const { aud, resource } = resolveTargets(client, form, null);
    if (settings.max_exchange_audiences !== undefined && aud.length > settings.max_exchange_audiences) {
      throw new OAuthError('invalid_target', `At most ${settings.max_exchange_audiences} audiences per exchange in this tenant.`);
    }

    const [subject, actor] = await Promise.all([
      verifyPresentedToken(deps, subjectToken, client.tenantId, 'subject', ahead),
      actorToken === undefined ? undefined : verifyPresentedToken(deps, actorToken, client.tenantId, 'actor', ahead),
    ]);
    requireProofForBound(subject, binding, 'subject');
    if (actor) requireProofForBound(actor, binding, 'actor');
    const requested = one(form, 'scope');
    const scope = await scopeForAudience(deps, client.tenantId, aud, narrowScope(requested, String(subject.scope ?? '').split(' ').filter(Boolean), client.scopes), requested !== undefined);

    const extra: Record<string, unknown> = {};
    if (subject.elevation !== undefined) Object.assign(extra, reexchangeOfElevated(subject, aud));
    const lineage = lineageFor(subject, settings.revoke_exchanged_tokens !== false);
    if (lineage.length) extra.lineage = lineage;
    // RFC 8693 4.1: the current actor on top, prior actors nested beneath it.
    if (actor) extra.act = { sub: actor.sub, ...(actor.client_id ? { client_id: actor.client_id } : {}), ...(subject.act ? { act: subject.act } : {}) };
    else if (subject.act) extra.act = subject.act;
    if (resource.length) extra.resource = resource.length === 1 ? resource[0] : resource;
    const now = Math.floor(Date.now() / 1000);
    // The issued token never outlives the token it was exchanged for.
    const ttl = Math.max(1, Math.min((await ttlFor(deps, client)), Number(subject.exp) - now));
    const t = await deps.tokens.accessTokens.issue({ tenant: client.tenantId, sub: String(subject.sub), clientId: client.clientId, aud: audClaim(aud), scope, ttlSeconds: ttl, extra: bindTo(extra, binding) }, deps.trace);
    return { access_token: t.token, issued_token_type: requestedType, token_type: tokenType(binding), expires_in: ttl, scope };
  },
};
