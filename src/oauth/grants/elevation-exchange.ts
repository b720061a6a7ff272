import type { Client } from '../../clients/model.js';
import type { Deps } from '../../deps.js';
import { ALERT_KIND, deriveRequestStatus, effectiveGrantStatus } from '../../elevation/model.js';
import { alertData, elevationEvents } from '../../elevation/service.js';
import { OAuthError } from '../../errors.js';
import { JwtError, TOKEN_TYPES, verifyJwt, type JwtPayload } from '../../tokens/jwt.js';
import { revocationSubject } from '../../tokens/revocation.js';
import { many, one, type Form } from '../params.js';
import { bindTo, tokenType, ttlFor, type Binding } from './grant.js';

const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';

/** Signature, type (svc-elevation+jwt), expiry, tenant, audience (the exchanging client) and revocation of an elevation subject token. */
async function verifyElevationToken(deps: Deps, client: Client, token: string): Promise<JwtPayload> {
  let p: JwtPayload;
  try {
    // Our own token: it expires at exp, without the clock tolerance kept for tokens minted elsewhere.
    p = verifyJwt(deps.tokens.keys, token, { typ: TOKEN_TYPES.elevation, issuer: deps.config.issuer, expiryTolerance: 0 }).payload;
  } catch (err) {
    if (err instanceof JwtError) {
      const why = err.reason === 'expired' ? 'has expired' : err.reason === 'signature' || err.reason === 'unknown_key' || err.reason === 'algorithm' ? 'has an invalid signature' : 'is not a valid elevation token';
      throw new OAuthError('invalid_grant', `The subject token ${why}.`);
    }
    throw err;
  }
  if (p.tenant !== client.tenantId) throw new OAuthError('invalid_grant', 'The subject token belongs to another tenant.');
  if (p.aud !== client.clientId) throw new OAuthError('invalid_grant', 'The subject token was issued for another client.');
  if (await deps.tokens.revocations.isRevoked(revocationSubject(p, client.tenantId))) {
    throw new OAuthError('invalid_grant', 'The subject token has been revoked.');
  }
  return p;
}

/**
 * RFC 8693 exchange of an elevation subject token (Authentication rule 4). The grant is re-read under
 * the request's lock at exchange time: it must still be active and its request approved and unexpired.
 * The access token's sub is the target, aud the grant's audience, authorization_details the grant's
 * (RFC 9396), act the requester (RFC 8693 4.1); it never outlives the grant, and no refresh token is
 * issued. Its jti is recorded against the grant, so revoking the grant revokes it; its `elevation` claim
 * names the grant, and its `lineage` the subject token, so a token ever exchanged from it goes too.
 */
export async function exchangeElevation(deps: Deps, client: Client, form: Form, binding?: Binding): Promise<Record<string, unknown>> {
  const requested = one(form, 'requested_token_type') ?? ACCESS_TOKEN;
  if (requested !== ACCESS_TOKEN) throw new OAuthError('invalid_request', 'An elevation token is exchanged for an access token only.');
  if (one(form, 'actor_token') !== undefined) throw new OAuthError('invalid_request', 'An elevation token carries its actor; actor_token is not accepted with it.');
  const p = await verifyElevationToken(deps, client, String(one(form, 'subject_token')));
  const now = Date.now();
  return deps.store.transaction(client.tenantId, async (store, tx) => {
    const r = await store.approvals.getRequest(String(p.request_id ?? ''), { lock: true });
    const g = r ? await store.approvals.getGrant(String(p.grant_id ?? ''), { lock: true }) : null;
    if (!r || !g || g.request_id !== r.id) throw new OAuthError('invalid_grant', 'The elevation grant does not exist.');
    const reqStatus = deriveRequestStatus(r, await store.approvals.steps(r.id), now);
    const status = effectiveGrantStatus(g, now);
    if (status !== 'active' || reqStatus !== 'approved') throw new OAuthError('invalid_grant', `The elevation grant is ${status === 'active' ? `active but its request is ${reqStatus}` : status}.`);
    for (const a of [...many(form, 'audience'), ...many(form, 'resource')]) {
      if (a !== g.audience) throw new OAuthError('invalid_target', 'An elevation token is exchanged for its grant\'s audience only.');
    }
    const remaining = Math.floor((Number(g.expires_at) - now) / 1000);
    if (remaining < 1) throw new OAuthError('invalid_grant', 'The elevation grant has expired.');
    const ttl = Math.min((await ttlFor(deps, client)), remaining);
    const t = await deps.tokens.accessTokens.issue({
      tenant: client.tenantId, sub: r.target_subject_id, clientId: client.clientId, aud: g.audience, scope: '', ttlSeconds: ttl,
      extra: bindTo({
        act: { sub: r.requester_id }, authorization_details: g.authorization_details,
        // Which grant it came from, and whether that grant lets it be exchanged again (src/oauth/grants/token-exchange.ts).
        elevation: { grant_id: g.id, ...(r.allow_reexchange ? { reexchange: true } : {}) },
        // The subject token is its parent: revoking it (the grant revokes both) ends this token too.
        lineage: [{ jti: String(p.jti), client_id: client.clientId }],
      }, binding),
    }, deps.trace);
    await store.approvals.recordToken({ grant_id: g.id, jti: t.jti, kind: 'access', client_id: client.clientId, expires_at: t.exp * 1000 });
    await elevationEvents.emit(tx, client.tenantId, 'security.alert', alertData(ALERT_KIND.used, g, r, { type: 'client', id: client.clientId }));
    return { access_token: t.token, issued_token_type: ACCESS_TOKEN, token_type: tokenType(binding), expires_in: ttl, authorization_details: g.authorization_details };
  });
}
