import { createHash, timingSafeEqual } from 'node:crypto';
import { GRANT } from '../../clients/model.js';
import { declareEvents } from '../../events/declare.js';
import { OAuthError } from '../../errors.js';
import { recordIssued, redeemCode } from '../../login/codes.js';
import { one, required } from '../params.js';
import { issueForUser, type Grant } from './grant.js';
import { issueOnce, revokeIssued } from './revoke-issued.js';

/** A replayed authorization code is a security alert (its first tokens are revoked). */
const codeGrantEvents = declareEvents(['security.alert']);

const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
const invalidGrant = (why = 'The authorization code is invalid.') => new OAuthError('invalid_grant', why);

function pkceMatches(verifier: string, challenge: string): boolean {
  const computed = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}

/**
 * RFC 6749 4.1.3 with PKCE (RFC 7636) and OpenID Connect: the code is single-use and bound to the
 * client, redirect URI, challenge, nonce and scope. Issues the person's tokens (issueForUser: access
 * token, ID token for openid, refresh token for offline_access or a first-party client).
 */
export const authorizationCode: Grant = {
  type: GRANT.authorizationCode,
  // The scope is the one the user granted; a scope parameter here is not read (RFC 6749 4.1.3).
  params: ['code', 'redirect_uri', 'code_verifier', 'audience', 'resource'],
  async handle(deps, client, form, _ahead, binding) {
    const code = required(form, 'code');
    const redemption = await redeemCode(deps.redis, code);
    if (redemption.kind === 'unknown') throw invalidGrant();
    const rec = redemption.record;
    if (redemption.kind === 'replay') {
      if (redemption.issued && rec.clientId === client.clientId) await revokeIssued(deps, rec.tenantId, redemption.issued);
      deps.log.warn({ client_id: client.clientId }, 'authorization code replay: tokens from its first use revoked');
      await deps.sql.begin((tx) => codeGrantEvents.emit(tx, rec.tenantId, 'security.alert', { user_id: rec.userId, client_id: rec.clientId, reason: 'authorization_code_replay' }));
      throw invalidGrant('The authorization code was already used.');
    }
    if (rec.clientId !== client.clientId || rec.tenantId !== client.tenantId) throw invalidGrant();
    if (rec.exp <= Math.floor(Date.now() / 1000)) throw invalidGrant('The authorization code has expired.');
    const redirectUri = one(form, 'redirect_uri');
    if (rec.redirectUriGiven ? redirectUri !== rec.redirectUri : redirectUri !== undefined && redirectUri !== rec.redirectUri) {
      throw invalidGrant('redirect_uri does not match the authorization request.');
    }
    const verifier = one(form, 'code_verifier');
    if (rec.codeChallenge) {
      if (verifier === undefined) throw invalidGrant('code_verifier is required.');
      if (!VERIFIER.test(verifier) || !pkceMatches(verifier, rec.codeChallenge)) throw invalidGrant('The code_verifier does not match the code_challenge.');
    } else if (verifier !== undefined) {
      // RFC 9700 4.8.2: a verifier for a code issued without a challenge is a downgrade attempt.
      throw invalidGrant('code_verifier was sent but the authorization request had no code_challenge.');
    }

    if (rec.dpopJkt !== undefined) {
      // RFC 9449 10: a code bound at /authorize is redeemed only with a proof of that key.
      if (!binding) throw new OAuthError('invalid_dpop_proof', 'The authorization code is DPoP-bound: send a DPoP proof of its key.');
      if (binding.jkt !== rec.dpopJkt) throw invalidGrant('The DPoP proof\'s key is not the one the authorization request named (dpop_jkt).');
    }
    // The tenant is the code's, which is the client's (checked above). Revoked again when a replay
    // arrived while they were being issued, or the user was locked since the sign-in.
    const { body } = await issueOnce(deps, rec.tenantId, rec,
      () => issueForUser(deps, client, { userId: rec.userId, email: rec.email, authTime: rec.authTime, scope: rec.scope, nonce: rec.nonce, resource: rec.resource, recordConsent: rec.firstPartyConsent === true }, form, binding),
      (issued) => recordIssued(deps.redis, redemption.codeHash, issued), () => invalidGrant('The authorization code was already used.'));
    return body;
  },
};
