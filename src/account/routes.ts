import type { Deps } from '../deps.js';
import { AppError } from '../errors.js';
import { declareEvents } from '../events/declare.js';
import type { HttpRequest } from '../http/request.js';
import type { Reply, Route } from '../http/types.js';
import { depsFor } from '../request-deps.js';
import { loginContext, type LoginContext } from '../login/context.js';
import { checkCsrf, csrfFor } from '../login/csrf.js';
import { generateCode, verifyCode } from '../login/email-code.js';
import { SESSION_COOKIE } from '../login/options.js';
import { failure } from '../login/respond.js';
import { clearSessionCookie, createSession, destroySession, readSession, sessionCookie, type Session } from '../login/sessions.js';
import { loginUser } from '../login/users.js';
import { normalizeEmail } from '../users/email.js';
import { accountPage, passkeyAddressNotice, reauthPage, signedOutPage } from './page.js';
import { deletePasskey, renamePasskey } from './passkeys/service.js';
import { passkeyLoginRoutes } from './passkeys/login.js';
import { passkeyApiRoutes } from './passkeys/routes.js';
import { revokeConsent } from './revoke-consent.js';
import { ACCOUNT_CLIENT, ACCOUNT_CLIENT_NAME } from './session.js';
import { accountSignIn, rememberTenant } from './sign-in.js';

/** The deps a request of the account page works with, and the login context made from them (depsFor). */
interface Scope { deps: Deps; ctx: LoginContext }

/** Signing out of the account page. */
const accountEvents = declareEvents(['auth.logout']);
const NOTICE = /^(added|renamed|deleted|revoked|reauth)$/;

/**
 * The account page (/account) and its form posts (each with a CSRF token), server-rendered like the
 * login pages, plus the passkey JSON API it calls and passkey sign-in for the login page. A post answers 303 back to the page with a notice.
 */
export function accountRoutes(deps: Deps): Route[] {
  const shared: Scope = { deps, ctx: loginContext(deps) };
  /** A sampled request's deps and login context (their clients make spans under it); the shared ones otherwise. */
  const scoped = (req: HttpRequest): Scope => { const d = depsFor(deps, req); return d === deps ? shared : { deps: d, ctx: loginContext(d) }; };
  const back = (notice: string): Reply => ({ status: 303, headers: { Location: `/account?done=${notice}`, 'Cache-Control': 'no-store' } });
  // Signed out (or the session ended) on a page under /account: /account sends the person to sign in and back.
  const toAccount: Reply = { status: 303, headers: { Location: '/account', 'Cache-Control': 'no-store' } };
  const addressNotice = passkeyAddressNotice(deps.config.issuer);

  async function render({ deps, ctx }: Scope, req: HttpRequest, session: Session, extra: { notice?: string; error?: string; status?: number } = {}): Promise<Reply> {
    const store = deps.store.forTenant(session.tenantId);
    const [passkeys, consents, activity] = await Promise.all([
      store.passkeys.listForUser(session.userId), store.consents.listForUser(session.userId), store.accountActivity.recentForUser(session.userId, 10),
    ]);
    const csrf = csrfFor(ctx, req);
    const cookies = [csrf.cookie, rememberTenant(req, session.tenantId, ctx.secureCookies)].filter((c): c is string => c !== undefined);
    return accountPage({ email: session.email, csrf: csrf.token, passkeys, consents, activity, passkeyNotice: addressNotice, ...extra, cookies: cookies.length ? cookies : undefined });
  }

  /** A form post of the signed-in user: CSRF token first, then the action; expected failures shown on the page. */
  function formAction(fn: (req: HttpRequest, session: Session, data: Record<string, unknown>, scope: Scope) => Promise<Reply>) {
    return async (req: HttpRequest): Promise<Reply> => {
      try {
        const scope = scoped(req);
        const data = req.data as Record<string, unknown>;
        checkCsrf(scope.ctx, req, data.csrf_token);
        const session = await readSession(scope.deps, req.cookies()[SESSION_COOKIE]);
        if (!session) return toAccount;
        try { return await fn(req, session, data, scope); } catch (err) {
          if (!(err instanceof AppError) || err.status >= 500) throw err;
          if (err.details?.reauthenticate) return { status: 303, headers: { Location: '/account/reauth', 'Cache-Control': 'no-store' } };
          return render(scope, req, session, { error: err.message, status: err.status });
        }
      } catch (err) { return failure(err, false, 'public'); }
    };
  }

  const form = { iface: 'public' as const, html: true, body: 'form' as const, bodyLimit: 8192 };
  return [
    ...passkeyApiRoutes(deps),
    // Passkey sign-in at /authorize lives here (beside the WebAuthn code), not in src/login: login must not depend on account.
    ...passkeyLoginRoutes(deps),
    {
      method: 'GET', path: '/account', iface: 'public', html: true,
      doc: { summary: 'The account page: email, passkeys, applications with access, recent activity; signed out, a redirect to sign in (?tenant= names the tenant) and back', tags: ['account'], security: 'session', responses: { 200: null, 303: null }, errors: [403, 404] },
      handler: async (req) => {
        const scope = scoped(req);
        const session = await readSession(scope.deps, req.cookies()[SESSION_COOKIE]);
        if (!session) return accountSignIn(scope.deps, req);
        const notice = req.searchParams().get('done') ?? undefined;
        return render(scope, req, session, { notice: notice && NOTICE.test(notice) ? notice : undefined });
      },
    },
    { ...form, method: 'POST', path: '/account/passkeys/:id/rename', handler: formAction(async (req, s, d, { deps }) => { await renamePasskey(deps, s, req.params.id!, typeof d.device_name === 'string' ? d.device_name : ''); return back('renamed'); }) },
    { ...form, method: 'POST', path: '/account/passkeys/:id/delete', handler: formAction(async (req, s, _d, { deps }) => { await deletePasskey(deps, s, req.params.id!); return back('deleted'); }) },
    { ...form, method: 'POST', path: '/account/consents/:id/revoke', handler: formAction(async (req, s, _d, { deps }) => { await revokeConsent(deps, s.tenantId, s.userId, req.params.id!); return back('revoked'); }) },
    {
      ...form, method: 'POST', path: '/account/signout',
      handler: formAction(async (req, s, _d, { deps, ctx }) => {
        await destroySession(deps.redis, req.cookies()[SESSION_COOKIE]);
        await deps.sql.begin((tx) => accountEvents.emit(tx, s.tenantId, 'auth.logout', { user_id: s.userId }))
          .catch((err) => deps.log.warn({ err: (err as Error).message }, 'logout event not recorded'));
        return signedOutPage([clearSessionCookie(ctx.secureCookies)]);
      }),
    },
    {
      method: 'GET', path: '/account/reauth', iface: 'public', html: true,
      handler: async (req) => {
        const { deps, ctx } = scoped(req);
        const session = await readSession(deps, req.cookies()[SESSION_COOKIE]);
        if (!session) return toAccount;
        const csrf = csrfFor(ctx, req);
        const hasPasskeys = (await deps.store.forTenant(session.tenantId).passkeys.countForUser(session.userId)) > 0;
        return reauthPage({ email: session.email, csrf: csrf.token, sent: false, hasPasskeys, cookies: csrf.cookie ? [csrf.cookie] : undefined });
      },
    },
    {
      ...form, method: 'POST', path: '/account/reauth/send',
      handler: formAction(async (req, s, _d, { ctx }) => {
        await generateCode(ctx, { email: s.email, tenantId: s.tenantId, clientId: ACCOUNT_CLIENT, clientName: ACCOUNT_CLIENT_NAME, ip: req.ip });
        return reauthPage({ email: s.email, csrf: csrfFor(ctx, req).token, sent: true });
      }),
    },
    {
      ...form, method: 'POST', path: '/account/reauth/verify',
      handler: formAction(async (req, s, d, { deps, ctx }) => {
        const outcome = await verifyCode(ctx, s.email, typeof d.code === 'string' ? d.code.trim() : '');
        if (!outcome.ok || outcome.tenantId !== s.tenantId) {
          return reauthPage({ email: s.email, csrf: csrfFor(ctx, req).token, sent: true, error: 'The code is invalid or has expired.', status: 400 });
        }
        const user = await loginUser(deps, { tenantId: s.tenantId, email: normalizeEmail(s.email), clientId: ACCOUNT_CLIENT });
        // A fresh session (new id) with a new sign-in time; the old one ends.
        await destroySession(deps.redis, req.cookies()[SESSION_COOKIE]);
        const { id } = await createSession(deps.redis, { tenantId: s.tenantId, userId: user.id, email: user.email, authTime: Math.floor(Date.now() / 1000) });
        return { ...back('reauth'), cookies: [sessionCookie(id, ctx.secureCookies)] };
      }),
    },
  ];
}
