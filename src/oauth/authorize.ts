import { depsFor } from '../request-deps.js';
import type { Deps } from '../deps.js';
import type { HttpRequest } from '../http/request.js';
import type { Reply, Route } from '../http/types.js';
import { trustedTarget, validateRequest, RedirectableError, type AuthorizationRequest, type Query } from '../login/authorize/index.js';
import type { Client } from '../clients/model.js';
import { completeAuthorization, sessionUsable } from '../login/complete.js';
import { loginContext } from '../login/context.js';
import { csrfFor } from '../login/csrf.js';
import { dropInteraction, saveInteraction } from '../login/interaction.js';
import { LOGIN, SESSION_COOKIE } from '../login/options.js';
import { consentPage, emailPage } from '../login/pages.js';
import { originOf, redirectTo } from '../login/redirect.js';
import { failure, wantsJson } from '../login/respond.js';
import { readSessionRecord, type Session } from '../login/sessions.js';
import { NO_STORE } from './params.js';
import { resolveRequest } from '../login/authorize/resolve-request.js';
import { requirementsFor } from '../tenants/security-profile.js';

/**
 * GET /authorize (steps 1 and 4 of the login flow). Checks run as small named steps: client and
 * redirect URI first (failures shown as a page, never redirected), then the rest (failures sent back
 * to the redirect URI). With a usable session it issues the code; with prompt=none and none it answers
 * login_required; otherwise it shows the login page (or, to API clients, a JSON login_required).
 */
export function authorizeRoutes(base: Deps): Route[] {
  const { issuer } = base.config;

  async function handle(req: HttpRequest): Promise<Reply> {
    // A sampled request's view (its clients make spans under it); the process's deps otherwise.
    const deps = depsFor(base, req);
    const ctx = loginContext(deps);
    const json = wantsJson(req);
    // The session (step 4 of a login) is read in the same Redis write as the client's tenant check below,
    // instead of a round trip after it; only a request that gets that far uses it. Whether its user was
    // locked, suspended or deleted since is read with the code write (completeAuthorization).
    const sessionRead = readSessionRecord(deps.redis, req.cookies()[SESSION_COOKIE]);
    sessionRead.catch(() => {});
    let q: Query;
    let pushedId: string | undefined;
    let target;
    try {
      ({ q, pushedId } = await resolveRequest(deps, (req.queryData ?? {}) as Query));
      target = await trustedTarget(deps, q);
    } catch (err) { return failure(err, json); }
    const { client, tenantCheck } = target;
    // The tenant's suspension check is still in flight (it left with the session read): every answer
    // waits for it, and a refused tenant gets the 403 page whatever else the request says.
    const refusal = (): Promise<Reply | null> => tenantCheck.then(() => null, (err) => failure(err, json));
    let areq: AuthorizationRequest;
    try {
      const need = requirementsFor(client, (await deps.tokens.tenantSettings.get(client.tenantId)).settings);
      if (need.par && pushedId === undefined) throw new RedirectableError('invalid_request', 'This application must push its authorization requests to the pushed authorization request endpoint (RFC 9126).');
      areq = validateRequest(client, target, q, need, pushedId);
    } catch (err) {
      const refused = await refusal();
      if (refused) return refused;
      if (!(err instanceof RedirectableError)) throw err;
      const state = typeof q.state === 'string' && q.state !== '' ? q.state : undefined;
      return redirectTo(target.redirectUri, issuer, { error: err.oauthCode, error_description: err.message, state });
    }
    const session = await sessionRead;
    if (!areq.prompt.includes('login') && sessionUsable(session, areq)) {
      const refused = await refusal();
      if (refused) return refused;
      const done = await completeAuthorization(deps, client, areq, session);
      if (done.kind === 'redirect') return done.reply;
      if (done.kind === 'consent_needed') return askConsent(req, client, areq, session, json);
      // signed_out: answered as a request without a session.
    }
    if (areq.prompt.includes('none')) {
      return (await refusal()) ?? redirectTo(areq.redirectUri, issuer, { error: 'login_required', error_description: 'The user is not signed in.', state: areq.state });
    }
    // Step 1 of a login: the interaction is written in the same Redis round trip as the tenant check
    // (a request without a session cookie reads nothing else); a refused tenant's is dropped again.
    const saving = saveInteraction(deps.redis, areq);
    saving.catch(() => {});
    const refused = await refusal();
    if (refused) { void saving.then((it) => dropInteraction(deps.redis, it.id), () => {}); return refused; }
    const it = await saving;
    if (json) {
      return {
        headers: NO_STORE,
        body: {
          login_required: true, interaction: it.id, client_id: client.clientId, client_name: client.name, scope: areq.scope.join(' '),
          expires_in: LOGIN.interactionTtlSeconds,
          email_code: { generate: `${issuer}/email-code/generate`, verify: `${issuer}/email-code/verify`, code_length: LOGIN.codeLength },
        },
      };
    }
    const csrf = csrfFor(ctx, req);
    const tenantName = (await deps.tokens.tenantSettings.get(client.tenantId)).displayName;
    return emailPage({ clientName: client.name, tenantName, csrf: csrf.token, interaction: it.id, email: areq.loginHint, cookies: csrf.cookie ? [csrf.cookie] : undefined });
  }

  async function askConsent(req: HttpRequest, client: Client, areq: AuthorizationRequest, session: Session, json: boolean): Promise<Reply> {
    const deps = depsFor(base, req);
    const ctx = loginContext(deps);
    const it = await saveInteraction(deps.redis, areq);
    if (json) return { headers: NO_STORE, body: { consent_required: true, interaction: it.id, client_id: client.clientId, client_name: client.name, scope: areq.scope.join(' '), consent: `${issuer}/authorize/consent` } };
    const csrf = csrfFor(ctx, req);
    return consentPage({ clientName: client.name, email: session.email, scopes: areq.scope, csrf: csrf.token, interaction: it.id, formTargets: [originOf(areq.redirectUri)].filter(Boolean), cookies: csrf.cookie ? [csrf.cookie] : undefined });
  }

  return [{
    method: 'GET', path: '/authorize', iface: 'oauth', querySchema: 'query.authorize', html: true,
    doc: { summary: 'Authorization endpoint (login flow steps 1 and 4): login page, or the authorization code with a session', tags: ['login'], security: 'session', responses: { 200: 'login.authorize-interaction', 302: null }, errors: [400, 403, 503] },
    handler: handle,
  }];
}
