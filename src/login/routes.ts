import type { Client } from '../clients/model.js';
import type { Context } from '@opentelemetry/api';
import type { Deps } from '../deps.js';
import { AppError, InvalidRequest, isDependencyUnavailable, NotFound, ServiceUnavailable } from '../errors.js';
import type { HttpRequest } from '../http/request.js';
import type { Reply, Route } from '../http/types.js';
import { validate, validatorFor } from '../http/validate.js';
import { InvalidEmail, isEmail, normalizeEmail } from '../users/email.js';
import { completeAuthorization, sessionUsable } from './complete.js';
import { grantConsent } from './consent.js';
import { loginContext, loginScopes, type LoginScope } from './context.js';
import { checkCsrf, csrfFor } from './csrf.js';
import { codeRequestWindows, generateCode, InvalidCode, verifyCode } from './email-code.js';
import { dropInteraction, loadInteraction, type Interaction } from './interaction.js';
import { LOGIN, SESSION_COOKIE } from './options.js';
import { codePage, consentPage, emailPage, LOGIN_CSS } from './pages.js';
import { originOf, redirectTo } from './redirect.js';
import { failure, formString, readBody, wantsJson } from './respond.js';
import { createSession, readSession, sessionCookie } from './sessions.js';
import { loginUser, recordLoginFailure } from './users.js';
import { emailHash } from './keys.js';
import { loginKeys } from '../store/redis-keys.js';
import { countHits, recordFailure, refuseWhenSpent } from '../store/rate-limit.js';

const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/**
 * Steps 2 and 3 of the login flow (email code generate and verify), continuing a pending authorization
 * after sign-in (resume, consent), and the pages' stylesheet. Each endpoint speaks JSON to API clients
 * and HTML forms (with CSRF tokens) to browsers.
 */
export function loginRoutes(deps: Deps): Route[] {
  const ctx = loginContext(deps);
  const { issuer } = deps.config;
  const scoped = loginScopes(deps);
  const resumeUrl = (it: Interaction) => `/authorize/resume?interaction=${encodeURIComponent(it.id)}`;

  async function clientFor(id: string | undefined, trace: Context | undefined): Promise<Client> {
    const { party, tenantCheck } = clientForDeferred(id, trace);
    const client = await party;
    await tenantCheck;
    return client;
  }

  /**
   * The client, and its tenant's suspension check left in flight (awaited by the caller, which may send
   * its own Redis commands meanwhile so they share the round trip).
   */
  function clientForDeferred(id: string | undefined, trace: Context | undefined): { party: Promise<Client>; tenantCheck: Promise<void> } {
    const party = (async () => {
      const client = id ? await deps.tokens.clients.get(id) : null;
      if (!client) throw new NotFound('client_not_found', 'The application is not known to this server.');
      if (client.status !== 'active') throw new AppError(403, 'client_disabled', 'The application is disabled.');
      return client;
    })();
    return { party, tenantCheck: deferredTenantCheck(party.then((c) => c.tenantId), trace) };
  }

  function deferredTenantCheck(tenantId: Promise<string>, trace: Context | undefined): Promise<void> {
    const check = tenantId.then(async (t) => {
      if (await deps.tokens.revocations.tenantRefused(t, trace)) throw new AppError(403, 'forbidden', 'Sign-in is unavailable: this organization is suspended.');
    });
    check.catch(() => {}); // awaited by the caller
    return check;
  }

  /**
   * Who a sign-in is for: the application of its authorization request, or, for a sign-in one of this
   * server's pages asked for (returnTo), that page within the request's tenant.
   */
  async function partyOf(it: Interaction, trace: Context | undefined): Promise<Party> {
    const { party, tenantCheck } = partyOfDeferred(it, trace);
    const p = await party;
    await tenantCheck;
    return p;
  }

  type Party = { clientId: string; name: string; tenantId: string; client?: Client };
  function partyOfDeferred(it: Interaction, trace: Context | undefined): { party: Promise<Party>; tenantCheck: Promise<void> } {
    if (!it.returnTo) {
      const { party, tenantCheck } = clientForDeferred(it.request.clientId, trace);
      return { party: party.then((client) => ({ clientId: client.clientId, name: client.name, tenantId: client.tenantId, client })), tenantCheck };
    }
    return { party: Promise.resolve({ clientId: it.request.clientId, name: it.returnTo.name, tenantId: it.request.tenantId }), tenantCheck: deferredTenantCheck(Promise.resolve(it.request.tenantId), trace) };
  }

  /** The party of a code request, its tenant check left in flight for generateCode (which writes the code meanwhile). */
  async function codeParty(deferred: { party: Promise<Party>; tenantCheck: Promise<void> }): Promise<{ party: Party; tenantCheck: Promise<void> }> {
    try { return { party: await deferred.party, tenantCheck: deferred.tenantCheck }; } catch (err) { await deferred.tenantCheck; throw err; }
  }

  /** Browser posts: CSRF token first, then the pending authorization request they belong to. */
  async function browserInteraction({ deps, ctx }: LoginScope, req: HttpRequest, data: Record<string, unknown>, csrf = true): Promise<Interaction> {
    if (csrf) checkCsrf(ctx, req, data.csrf_token);
    const it = await loadInteraction(deps.redis, data.interaction);
    if (!it) throw new InvalidRequest('This sign-in has expired. Return to the application and start again.');
    return it;
  }

  async function generate(req: HttpRequest): Promise<Reply> {
    const scope = scoped(req);
    const { deps, ctx } = scope;
    const { form, data } = readBody(req);
    if (form) {
      // A form post keeps its CSRF check; a client that asked for JSON gets its errors as JSON (OpenAPI).
      const api = wantsJson(req);
      try {
        const email = formString(data, 'email')?.trim() ?? '';
        checkCsrf(ctx, req, data.csrf_token);
        // The rate windows count in the round trip of the interaction read (see CodeRequestReads).
        const hits = isEmail(email) ? countHits(deps.redis, codeRequestWindows(email, req.ip)) : undefined;
        hits?.catch(() => {});
        const it = await browserInteraction(scope, req, data, false);
        const { party: client, tenantCheck } = await codeParty(partyOfDeferred(it, deps.trace));
        const csrf = csrfFor(ctx, req);
        if (!isEmail(email)) {
          await tenantCheck;
          if (api) throw new InvalidEmail();
          return emailPage({ clientName: client.name, csrf: csrf.token, interaction: it.id, email, error: 'Enter a valid email address.', status: 422 });
        }
        try {
          const { expiresIn } = await generateCode(ctx, { email, tenantId: client.tenantId, clientId: client.clientId, clientName: client.name, ip: req.ip }, { hits, tenantCheck });
          return codePage({ email, csrf: csrf.token, interaction: it.id, expiresIn, formTargets: [originOf(it.request.redirectUri)].filter(Boolean) });
        } catch (err) {
          if (!(err instanceof AppError) || err.status !== 429 || api) throw err;
          const p = emailPage({ clientName: client.name, csrf: csrf.token, interaction: it.id, email, error: `Too many codes were requested. Try again in ${err.retryAfter} seconds.`, status: 429 });
          return { ...p, headers: { ...p.headers, ...err.headers } };
        }
      } catch (err) { return failure(err, api, 'public'); }
    }
    validate(validatorFor('login.email-code-generate'), data);
    const email = String(data.email).trim();
    if (!isEmail(email)) throw new InvalidEmail();
    // One round trip for the interaction and the rate windows, one for the tenant check and the code.
    const hits = countHits(deps.redis, codeRequestWindows(email, req.ip));
    hits.catch(() => {});
    const it = data.interaction !== undefined ? await loadInteraction(deps.redis, data.interaction) : null;
    if (data.interaction !== undefined && !it) throw new InvalidRequest('The interaction has expired.');
    const { party: client, tenantCheck } = await codeParty(it ? partyOfDeferred(it, deps.trace) : clientForDeferred(data.client_id as string | undefined, deps.trace));
    if (it && data.client_id !== undefined && data.client_id !== client.clientId) { await tenantCheck; throw new InvalidRequest('client_id does not match the interaction.'); }
    const { expiresIn } = await generateCode(ctx, { email, tenantId: client.tenantId, clientId: client.clientId, clientName: client.name, ip: req.ip }, { hits, tenantCheck });
    return { headers: NO_STORE, body: { sent: true, expires_in: expiresIn, code_length: LOGIN.codeLength } };
  }

  /** Checks the code and signs the user in; failures are recorded as auth.login_failed. */
  async function signIn({ deps, ctx }: LoginScope, email: string, code: string, ip: string): Promise<{ cookie: string; sub: string; authTime: number; tenantId: string }> {
    // Guessing across codes: failures per address and per client IP are budgeted in Redis (every process).
    const windowMs = LOGIN.verifyFailureWindowSeconds * 1000;
    const budgets = [
      { key: loginKeys.otpFailAddress(emailHash(email)), limit: LOGIN.verifyFailuresPerAddress, windowMs },
      { key: loginKeys.otpFailIp(ip || 'unknown'), limit: LOGIN.verifyFailuresPerIp, windowMs },
    ];
    await refuseWhenSpent(deps.redis, budgets, 'Too many failed sign-in attempts. Try again later.');
    const outcome = await verifyCode(ctx, email, code);
    if (!outcome.ok) {
      await recordFailure(deps.redis, budgets);
      if (outcome.tenantId && outcome.clientId) {
        await recordLoginFailure(deps, { tenantId: outcome.tenantId, clientId: outcome.clientId, email: normalizeEmail(email), reason: outcome.reason })
          .catch((err) => deps.log.warn({ err: (err as Error).message }, 'login failure event not recorded'));
      }
      throw outcome.reason === 'too_many_attempts' ? new InvalidCode('Too many wrong codes: this code no longer works. Request a new one.') : new InvalidCode();
    }
    try {
      const user = await loginUser(deps, { tenantId: outcome.tenantId, email: normalizeEmail(email), clientId: outcome.clientId });
      const authTime = Math.floor(Date.now() / 1000);
      const { id } = await createSession(deps.redis, { tenantId: outcome.tenantId, userId: user.id, email: user.email, authTime });
      return { cookie: sessionCookie(id, ctx.secureCookies), sub: user.id, authTime, tenantId: outcome.tenantId };
    } catch (err) {
      // Answered 503 "retry shortly" (Postgres or Redis unreachable): the code must still work on the retry.
      if (err instanceof ServiceUnavailable || (!(err instanceof AppError) && isDependencyUnavailable(err))) await outcome.restore().catch(() => {});
      throw err;
    }
  }

  async function verify(req: HttpRequest): Promise<Reply> {
    const scope = scoped(req);
    const { deps, ctx } = scope;
    const { form, data } = readBody(req);
    if (form) {
      const api = wantsJson(req);
      let it: Interaction;
      try { it = await browserInteraction(scope, req, data); } catch (err) { return failure(err, api, 'public'); }
      const email = formString(data, 'email')?.trim() ?? '';
      const code = formString(data, 'code')?.trim() ?? '';
      try {
        const s = await signIn(scope, email, code, req.ip);
        if (s.tenantId !== it.request.tenantId) throw new InvalidCode();
        return { status: 303, headers: { Location: resumeUrl(it), ...NO_STORE }, cookies: [s.cookie] };
      } catch (err) {
        if (err instanceof InvalidCode && !api) {
          const csrf = csrfFor(ctx, req);
          return codePage({ email, csrf: csrf.token, interaction: it.id, expiresIn: LOGIN.codeTtlSeconds, formTargets: [originOf(it.request.redirectUri)].filter(Boolean), error: err.message, status: 400 });
        }
        return failure(err, api, 'public');
      }
    }
    validate(validatorFor('login.email-code-verify'), data);
    // The interaction is read in the same Redis write as the failure budgets signIn reads first.
    const itRead = data.interaction !== undefined ? loadInteraction(deps.redis, data.interaction) : null;
    itRead?.catch(() => {});
    const s = await signIn(scope, String(data.email), String(data.code).trim(), req.ip);
    const it = itRead ? await itRead : null;
    return {
      headers: NO_STORE, cookies: [s.cookie],
      body: { authenticated: true, sub: s.sub, auth_time: s.authTime, expires_in: LOGIN.sessionTtlSeconds, ...(it ? { continue: `${issuer}${resumeUrl(it)}` } : {}) },
    };
  }

  async function resume(req: HttpRequest): Promise<Reply> {
    const { deps, ctx } = scoped(req);
    const json = wantsJson(req);
    try {
      const it = await loadInteraction(deps.redis, (req.queryData as { interaction: string }).interaction);
      if (!it) throw new InvalidRequest('This sign-in has expired. Return to the application and start again.');
      const party = await partyOf(it, deps.trace);
      const session = await readSession(deps, req.cookies()[SESSION_COOKIE]);
      // prompt=login and max_age need a sign-in made after the request arrived.
      const fresh = !it.request.prompt.includes('login') && it.request.maxAge === undefined ? true : (session?.authTime ?? 0) >= it.createdAt;
      if (!sessionUsable(session, it.request) || !fresh) {
        const csrf = csrfFor(ctx, req);
        if (json) throw new AppError(401, 'unauthorized', 'Sign in first (POST /email-code/verify).');
        const tenantName = (await deps.tokens.tenantSettings.get(party.tenantId)).displayName;
        return emailPage({ clientName: party.name, tenantName, csrf: csrf.token, interaction: it.id, cookies: csrf.cookie ? [csrf.cookie] : undefined });
      }
      // A sign-in for one of this server's pages: back to it, with the session just made.
      if (!party.client) { await dropInteraction(deps.redis, it.id); return { status: 303, headers: { Location: it.returnTo!.path, ...NO_STORE } }; }
      const client = party.client;
      const done = await completeAuthorization(deps, client, { ...it.request, prompt: it.request.prompt.filter((p) => p !== 'login') }, session, 303);
      if (done.kind === 'redirect') { await dropInteraction(deps.redis, it.id); return done.reply; }
      if (done.kind === 'signed_out') throw new AppError(401, 'unauthorized', 'The session has ended: sign in again.');
      const csrf = csrfFor(ctx, req);
      return consentPage({ clientName: client.name, email: session.email, scopes: it.request.scope, csrf: csrf.token, interaction: it.id, formTargets: [originOf(it.request.redirectUri)].filter(Boolean), cookies: csrf.cookie ? [csrf.cookie] : undefined });
    } catch (err) { return failure(err, json); }
  }

  async function consent(req: HttpRequest): Promise<Reply> {
    const { deps } = scoped(req);
    // A body that is not a form (JSON, or unreadable) is answered in JSON, as is a client asking for it.
    let json = !(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded') || wantsJson(req);
    try {
      const { form, data } = readBody(req);
      json = !form || wantsJson(req);
      if (form) checkCsrf(ctx, req, data.csrf_token);
      const it = await loadInteraction(deps.redis, data.interaction);
      if (!it) throw new InvalidRequest('This sign-in has expired. Return to the application and start again.');
      if (it.returnTo) throw new InvalidRequest('This sign-in asks for no consent.');
      const client = await clientFor(it.request.clientId, deps.trace);
      const session = await readSession(deps, req.cookies()[SESSION_COOKIE]);
      if (!sessionUsable(session, it.request)) throw new AppError(401, 'unauthorized', 'Sign in first.');
      await dropInteraction(deps.redis, it.id);
      if (data.decision !== 'allow') {
        return redirectTo(it.request.redirectUri, issuer, { error: 'access_denied', error_description: 'The user denied access.', state: it.request.state }, 303);
      }
      await grantConsent(deps, client, session.userId, it.request.scope);
      const done = await completeAuthorization(deps, client, { ...it.request, prompt: [] }, session, 303);
      if (done.kind === 'signed_out') throw new AppError(401, 'unauthorized', 'The session has ended: sign in again.');
      if (done.kind !== 'redirect') throw new Error('consent was recorded but is not visible');
      return done.reply;
    } catch (err) { return failure(err, json); }
  }

  const routes: Route[] = [
    {
      method: 'POST', path: '/email-code/generate', iface: 'public', bodySchema: 'login.email-code-generate', bodyLimit: 8192,
      doc: { summary: 'Login step 2: email a one-time code (same answer for known and unknown addresses)', tags: ['login'], security: 'none', responses: { 200: 'login.email-code-sent' }, errors: [400, 403, 404, 422, 429, 503] },
      handler: generate,
    },
    {
      method: 'POST', path: '/email-code/verify', iface: 'public', bodySchema: 'login.email-code-verify', bodyLimit: 8192,
      doc: { summary: 'Login step 3: check the code and start a session (cookie svc_session)', tags: ['login'], security: 'none', responses: { 200: 'login.email-code-verified', 303: null }, errors: [400, 403, 422, 503] },
      handler: verify,
    },
    {
      method: 'GET', path: '/authorize/resume', iface: 'oauth', querySchema: 'query.authorize-resume', html: true,
      doc: { summary: 'Continue a pending authorization request after sign-in', tags: ['login'], security: 'session', responses: { 200: null, 303: null } },
      handler: resume,
    },
    {
      method: 'POST', path: '/authorize/consent', iface: 'oauth', html: true, bodyLimit: 8192,
      doc: { summary: 'Grant or deny a client the requested scopes', tags: ['login'], security: 'session', responses: { 303: null }, errors: [400, 401, 403] },
      handler: consent,
    },
    {
      method: 'GET', path: '/login/assets/login.css', iface: 'public',
      handler: () => ({ type: 'text/css; charset=utf-8', headers: { 'Cache-Control': 'public, max-age=3600', 'X-Content-Type-Options': 'nosniff' }, body: LOGIN_CSS }),
    },
  ];
  return routes;
}
