import { depsFor } from '../request-deps.js';
import type { Client } from '../clients/model.js';
import type { Deps } from '../deps.js';
import { InvalidRequest } from '../errors.js';
import { declareEvents } from '../events/declare.js';
import type { HttpRequest } from '../http/request.js';
import type { Reply, Route } from '../http/types.js';
import { PageError } from '../login/authorize/types.js';
import { loginContext } from '../login/context.js';
import { checkCsrf, csrfFor } from '../login/csrf.js';
import { SESSION_COOKIE } from '../login/options.js';
import { logoutConfirmPage, messagePage } from '../login/pages.js';
import { originOf } from '../login/redirect.js';
import { failure, readBody, wantsJson } from '../login/respond.js';
import { clearSessionCookie, destroySession, readSession } from '../login/sessions.js';
import { TOKEN_TYPES, type JwtPayload } from '../tokens/jwt.js';
import { verifyOwnJwt } from '../tokens/own-jwt.js';

/** RP-initiated logout of a signed-in session. */
const logoutEvents = declareEvents(['auth.logout']);

// An expired ID token is still a fine hint of who is logging out (RP-Initiated Logout 1.0, section 2).
const HINT_MAX_AGE = 365 * 86_400;
const FIELDS = ['id_token_hint', 'client_id', 'post_logout_redirect_uri', 'state', 'logout_hint', 'ui_locales'] as const;

/**
 * GET/POST /logout (OpenID Connect RP-Initiated Logout 1.0). The client comes from id_token_hint (its
 * aud) or client_id; post_logout_redirect_uri must be registered for it, else an error page is shown
 * and nobody is redirected. With a hint naming the signed-in user the session ends at once; without
 * one the user confirms on a page (with a CSRF token), so another site cannot sign them out.
 */
export function logoutRoutes(base: Deps): Route[] {
  const ctx = loginContext(base);
  const { issuer } = base.config;

  async function hintPayload(hint: string | undefined): Promise<JwtPayload | null> {
    if (!hint) return null;
    try {
      return await verifyOwnJwt(base.tokens.keys, hint, { typ: TOKEN_TYPES.id, issuer, clockTolerance: HINT_MAX_AGE });
    } catch {
      throw new PageError('The id_token_hint is not a valid ID token from this server.');
    }
  }

  async function handle(req: HttpRequest, params: Record<string, unknown>, posted: boolean, json: boolean): Promise<Reply> {
    // A sampled request's view (its clients make spans under it); the process's deps otherwise.
    const deps = depsFor(base, req);
    const p: Partial<Record<(typeof FIELDS)[number], string>> = {};
    for (const f of FIELDS) {
      const v = params[f];
      if (Array.isArray(v)) throw new InvalidRequest(`The ${f} parameter must not be repeated.`);
      if (typeof v === 'string' && v !== '') p[f] = v;
    }
    const hint = await hintPayload(p.id_token_hint);
    const hintClient = hint ? (Array.isArray(hint.aud) ? hint.aud[0] : hint.aud) as string | undefined : undefined;
    if (p.client_id && hintClient && p.client_id !== hintClient) throw new PageError('client_id does not match the id_token_hint.');
    const clientId = p.client_id ?? hintClient;
    let client: Client | null = null;
    if (clientId) {
      client = await deps.tokens.clients.get(clientId);
      if (!client) throw new PageError('The application is not known to this server.', 400, 'client_not_found');
      if (hint && hint.tenant !== undefined && hint.tenant !== client.tenantId) throw new PageError('The id_token_hint does not belong to this application.');
    }
    if (p.post_logout_redirect_uri !== undefined) {
      if (!client) throw new PageError('post_logout_redirect_uri needs id_token_hint or client_id.');
      if (!client.postLogoutRedirectUris.includes(p.post_logout_redirect_uri)) throw new PageError('The post_logout_redirect_uri is not registered for this application.');
    }
    const sid = req.cookies()[SESSION_COOKIE];
    const session = await readSession(deps, sid);
    const hintMatches = !!hint && !!session && hint.sub === session.userId && hint.tenant === session.tenantId;
    const confirmed = posted && params.confirm === 'yes';
    if (session && !hintMatches && !json) {
      if (!confirmed) {
        const csrf = csrfFor(ctx, req);
        const fields: Record<string, string> = {};
        for (const f of FIELDS) if (p[f] !== undefined) fields[f] = p[f]!;
        return logoutConfirmPage({ csrf: csrf.token, fields, cookies: csrf.cookie ? [csrf.cookie] : undefined, formTargets: p.post_logout_redirect_uri ? [originOf(p.post_logout_redirect_uri)].filter(Boolean) : [] });
      }
      checkCsrf(ctx, req, params.csrf_token);
    }
    if (session && json && !hintMatches) throw new InvalidRequest('An id_token_hint for the signed-in user is required.');
    if (session) {
      await destroySession(deps.redis, sid);
      await deps.sql.begin(async (tx) => {
        await logoutEvents.emit(tx, session.tenantId, 'auth.logout', { user_id: session.userId, ...(client ? { client_id: client.clientId } : {}) });
      }).catch((err) => deps.log.warn({ err: (err as Error).message }, 'logout event not recorded'));
    }
    const cookies = [clearSessionCookie(ctx.secureCookies)];
    if (p.post_logout_redirect_uri !== undefined) {
      const u = new URL(p.post_logout_redirect_uri);
      if (p.state !== undefined) u.searchParams.set('state', p.state);
      return { status: posted ? 303 : 302, headers: { Location: u.toString(), 'Cache-Control': 'no-store' }, cookies };
    }
    if (json) return { headers: { 'Cache-Control': 'no-store' }, cookies, body: { logged_out: true } };
    return messagePage('Signed out', session ? 'You are signed out.' : 'You were not signed in.', { cookies });
  }

  const run = (req: HttpRequest, get: () => { params: Record<string, unknown>; posted: boolean }): Promise<Reply> => {
    const json = wantsJson(req);
    return (async () => { const { params, posted } = get(); return handle(req, params, posted, json); })().catch((err) => failure(err, json));
  };
  const doc = { summary: 'RP-initiated logout: end the session and return to the client', tags: ['login'], security: 'session' as const, responses: { 200: 'login.logged-out', 302: null, 303: null }, errors: [400, 403] };
  return [
    { method: 'GET', path: '/logout', iface: 'oauth', html: true, doc, handler: (req) => run(req, () => ({ params: Object.fromEntries(req.searchParams()), posted: false })) },
    { method: 'POST', path: '/logout', iface: 'oauth', html: true, bodyLimit: 32_768, handler: (req) => run(req, () => ({ params: readBody(req).data, posted: true })) },
  ];
}
