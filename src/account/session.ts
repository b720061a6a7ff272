import type { Deps } from '../deps.js';
import { AppError, Forbidden, Unauthorized } from '../errors.js';
import type { HttpRequest } from '../http/request.js';
import { SESSION_COOKIE } from '../login/options.js';
import { readSession, type Session } from '../login/sessions.js';

/** What login events record as the client of sign-ins made for the account page itself (it is not an OAuth client), and its name on the login page. */
export const ACCOUNT_CLIENT = 'account';
export const ACCOUNT_CLIENT_NAME = 'your account';

/** Seconds within which a sign-in counts as recent enough to add or delete a passkey. */
export const RECENT_AUTH_SECONDS = 300;
/** Where a user whose sign-in is too old confirms it is them (the account page's re-authentication). */
export const REAUTH_PATH = '/account/reauth';

/** The account page user: the `svc_session` cookie only (a Bearer token is not accepted here). */
export async function accountSession(deps: Deps, req: HttpRequest): Promise<Session> {
  const session = await readSession(deps, req.cookies()[SESSION_COOKIE]);
  if (!session) throw new Unauthorized('unauthorized', 'Sign in first: this endpoint takes the svc_session cookie.');
  return session;
}

export function isRecent(session: Session, now = Math.floor(Date.now() / 1000)): boolean {
  return now - session.authTime <= RECENT_AUTH_SECONDS;
}

/** 403 unless the session's sign-in is recent; the details name the condition and where to re-authenticate. */
export function requireRecent(session: Session): void {
  if (isRecent(session)) return;
  throw new AppError(403, 'forbidden', `This needs a sign-in from the last ${RECENT_AUTH_SECONDS / 60} minutes. Confirm it is you at ${REAUTH_PATH} and try again.`,
    { details: { session: ['reauthentication_required'], reauthenticate: [REAUTH_PATH] } });
}

/**
 * CSRF defence of the cookie-authenticated JSON endpoints: an Origin header, when a browser sends one,
 * must be ours. (Without CORS no other site can send a JSON body or a PATCH/DELETE at all; this refuses
 * the rest.) Requests without Origin come from non-browser clients.
 */
export function checkOrigin(deps: Deps, req: HttpRequest): void {
  const origin = req.headers.origin;
  if (origin === undefined) return;
  const allowed = new Set([new URL(deps.config.issuer).origin, ...deps.config.webauthnOrigins]);
  if (!allowed.has(origin)) throw new Forbidden('forbidden', 'The request did not come from this site.');
}
