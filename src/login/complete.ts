import { dropPushed } from './authorize/pushed.js';
import type { Client } from '../clients/model.js';
import type { Deps } from '../deps.js';
import type { Reply } from '../http/types.js';
import type { AuthorizationRequest } from './authorize/types.js';
import { dropCode, issueCode } from './codes.js';
import { hasConsent } from './consent.js';
import { redirectTo } from './redirect.js';
import type { Session } from './sessions.js';

/** `signed_out`: the session was ended (its user locked, suspended or deleted since): sign in again. */
export type Completion = { kind: 'redirect'; reply: Reply } | { kind: 'consent_needed' } | { kind: 'signed_out' };

/**
 * Step 4 of the login flow: with a signed-in user and consent, issue a single-use authorization code
 * bound to client, redirect URI, PKCE challenge, nonce and scope, and send the browser back with it.
 * The session is checked against its user's `login` mark here (src/login/end-sessions.ts), whoever read it.
 */
export async function completeAuthorization(deps: Deps, client: Client, req: AuthorizationRequest, session: Session, status: 302 | 303 = 302): Promise<Completion> {
  // The code is written in the same Redis round trip as the consent cache read (a code whose consent
  // turns out missing is deleted again, unseen). A first-party client needs no consent: it is recorded
  // with the tokens when the code is redeemed (recordFirstPartyConsent), not read here.
  const asks = !req.prompt.includes('consent') && !client.firstParty;
  const issuing = !asks && !client.firstParty ? null : issueCode(deps.redis, {
    tenantId: client.tenantId, clientId: client.clientId, redirectUri: req.redirectUri, redirectUriGiven: req.redirectUriGiven, scope: req.scope,
    nonce: req.nonce, codeChallenge: req.codeChallenge, ...(req.dpopJkt !== undefined ? { dpopJkt: req.dpopJkt } : {}), ...(req.resource?.length ? { resource: req.resource } : {}), userId: session.userId, email: session.email, authTime: session.authTime,
    ...(client.firstParty ? { firstPartyConsent: true as const } : {}),
  });
  issuing?.catch(() => {});
  // Sent in the same tick as the code write, so it shares its round trip.
  const ended = deps.tokens.revocations.signInEnded(session.tenantId, session.userId, session.authTime, deps.trace);
  ended.catch(() => {});
  let consented: boolean;
  try {
    consented = client.firstParty || (asks && await hasConsent(deps, client, session.userId, req.scope));
    if (await ended) {
      void issuing?.then((code) => dropCode(deps.redis, code), () => {});
      return { kind: 'signed_out' };
    }
  } catch (err) {
    void issuing?.then((code) => dropCode(deps.redis, code), () => {});
    throw err;
  }
  if (!consented) {
    void issuing?.then((code) => dropCode(deps.redis, code), () => {});
    if (req.prompt.includes('none')) return { kind: 'redirect', reply: redirectTo(req.redirectUri, deps.config.issuer, { error: 'consent_required', error_description: 'The user has not consented to this application.', state: req.state }) };
    return { kind: 'consent_needed' };
  }
  const code = await issuing!;
  // RFC 9126 4: a pushed request is used once; until its code is issued, reloading the login page works.
  if (req.pushedId !== undefined) await dropPushed(deps.redis, req.pushedId);
  return { kind: 'redirect', reply: redirectTo(req.redirectUri, deps.config.issuer, { code, state: req.state }, status) };
}

/** Whether a session satisfies the request: same tenant, and recent enough for max_age. */
export function sessionUsable(session: Session | null, req: AuthorizationRequest, now = Math.floor(Date.now() / 1000)): session is Session {
  if (!session || session.tenantId !== req.tenantId) return false;
  if (req.maxAge !== undefined && now - session.authTime > req.maxAge) return false;
  return true;
}
