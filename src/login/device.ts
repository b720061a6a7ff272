import type { Client } from '../clients/model.js';
import type { Deps } from '../deps.js';
import { AppError, InvalidRequest, RateLimited, Unauthorized } from '../errors.js';
import { declareEvents } from '../events/declare.js';
import type { HttpRequest } from '../http/request.js';
import type { Reply, Route } from '../http/types.js';
import { validate, validatorFor } from '../http/validate.js';
import { DEVICE } from '../device/options.js';
import { decideDeviceAuthorization, enterUserCode, viewDeviceAuthorization, type DeviceView } from '../device/store.js';
import { displayUserCode, normalizeUserCode } from '../device/user-code.js';
import { redisKeys } from '../store/redis-keys.js';
import { recordFailure, refuseWhenSpent } from '../store/rate-limit.js';
import { grantConsent } from './consent.js';
import { loginContext } from './context.js';
import { checkCsrf, csrfFor } from './csrf.js';
import { saveReturnInteraction } from './interaction.js';
import { SESSION_COOKIE } from './options.js';
import { deviceConfirmPage, deviceEntryPage, messagePage } from './pages.js';
import { failure, readBody, wantsJson } from './respond.js';
import { readSession, type Session } from './sessions.js';
import { depsFor } from '../request-deps.js';

const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/** A user code entered past its budget looks like a shared or phished code: security receivers hear of it. */
const deviceEntryEvents = declareEvents(['security.suspicious_activity']);

/** What the person is told about a code that names no pending authorization any more. */
const REFUSED = {
  expired: 'That code has expired. Start again on your device.',
  done: 'That code was already used.',
  burned: 'That code was entered too many times and no longer works. Start again on your device.',
} as const;

/** A code that names no pending authorization (typed wrong, expired, already used): the person is told why. */
class BadUserCode extends AppError {
  constructor(description: string) { super(400, 'invalid_request', description, { details: { user_code: ['is invalid, expired or already used'] } }); }
}

/**
 * The verification side of the device authorization grant (RFC 8628 3.3): /device, where a person types
 * the user code, signs in with the login pages (email code or passkey: a sign-in interaction whose way
 * back is /device/confirm) and allows or denies the device. Each step speaks JSON to API clients and
 * HTML forms with CSRF tokens to browsers, like the login routes.
 */
export function deviceRoutes(base: Deps): Route[] {
  // CSRF only: its keys are the process's (no mail is sent from these pages, so no request's context is needed).
  const ctx = loginContext(base);
  const { issuer } = base.config;
  const confirmPath = (handle: string) => `/device/confirm?handle=${encodeURIComponent(handle)}`;

  /** Wrong codes per client address, across processes: guessing the 20^8 codes needs this budget. */
  const entryBudget = (ip: string) => [{ key: redisKeys.deviceEntryFailIp(ip || 'unknown'), limit: DEVICE.entryFailuresPerSource, windowMs: DEVICE.entryFailureWindowSeconds * 1000 }];

  /** The client behind a device authorization, if it may still sign people in. */
  async function clientOf(deps: Deps, view: DeviceView): Promise<Client> {
    const client = await deps.tokens.clients.get(view.clientId);
    if (!client || client.status !== 'active' || client.tenantId !== view.tenantId) throw new AppError(403, 'client_disabled', 'The application is disabled.');
    if (await deps.tokens.revocations.tenantRefused(view.tenantId)) throw new AppError(403, 'forbidden', 'Sign-in is unavailable: this organization is suspended.');
    return client;
  }

  const sessionFor = async (deps: Deps, req: HttpRequest, view: DeviceView): Promise<Session | null> => {
    const s = await readSession(deps, req.cookies()[SESSION_COOKIE]);
    return s && s.tenantId === view.tenantId ? s : null;
  };

  /** The sign-in for the authorization's tenant, coming back to its consent page (the way back is built here, never taken from a request). */
  const signInFirst = (deps: Deps, client: Client, handle: string) =>
    saveReturnInteraction(deps.redis, { tenantId: client.tenantId, clientId: client.clientId, issuer, returnTo: { path: confirmPath(handle), name: client.name } });

  function confirmPage(req: HttpRequest, client: Client, view: DeviceView, session: Session, handle: string): Reply {
    const csrf = csrfFor(ctx, req);
    return deviceConfirmPage({ clientName: client.name, email: session.email, scopes: view.scope, userCode: displayUserCode(view.userCode), csrf: csrf.token, handle, cookies: csrf.cookie ? [csrf.cookie] : undefined });
  }

  /** GET /device: the entry form, prefilled from verification_uri_complete (the person still confirms it, RFC 8628 3.3.1). */
  function entryForm(req: HttpRequest): Reply {
    const csrf = csrfFor(ctx, req);
    const typed = (req.queryData as { user_code?: string }).user_code;
    return deviceEntryPage({ csrf: csrf.token, userCode: typed, cookies: csrf.cookie ? [csrf.cookie] : undefined });
  }

  /** The pending authorization a typed code names, counted against both budgets; BadUserCode otherwise. */
  async function lookUp(deps: Deps, typed: string, ip: string): Promise<{ handle: string; view: DeviceView }> {
    const budget = entryBudget(ip);
    await refuseWhenSpent(deps.redis, budget, 'Too many wrong codes were entered. Try again later.');
    const code = normalizeUserCode(typed);
    const entry = code === null ? { kind: 'unknown' as const } : await enterUserCode(deps.redis, code);
    if (entry.kind === 'unknown') {
      await recordFailure(deps.redis, budget);
      throw new BadUserCode('That code is not valid. Check the code on your device and try again.');
    }
    if (entry.kind === 'burned') await reportBurned(deps, entry.handle);
    if (entry.kind !== 'ok') throw new BadUserCode(REFUSED[entry.kind]);
    const view = await viewDeviceAuthorization(deps.redis, entry.handle);
    if (!view) throw new BadUserCode(REFUSED.expired);
    return { handle: entry.handle, view };
  }

  /** The entry that refused a device authorization for good: `security.suspicious_activity` for its tenant (best effort). */
  async function reportBurned(deps: Deps, handle: string): Promise<void> {
    const view = await viewDeviceAuthorization(deps.redis, handle).catch(() => null);
    if (!view) return;
    await deps.sql.begin((tx) => deviceEntryEvents.emit(tx, view.tenantId, 'security.suspicious_activity', { client_id: view.clientId, reason: 'device_user_code_overuse' }))
      .catch((err: unknown) => deps.log.warn({ err: (err as Error).message }, 'device code overuse event not recorded'));
  }

  /** POST /device: the typed code; then the consent page, or the sign-in first. */
  async function enter(req: HttpRequest): Promise<Reply> {
    // A sampled request's deps (its clients make spans under it; depsFor), the process's otherwise.
    const deps = depsFor(base, req);
    let json = wantsJson(req);
    let typed = '';
    let csrf: ReturnType<typeof csrfFor> | undefined;
    try {
      const { form, data } = readBody(req);
      json = !form || json;
      validate(validatorFor('login.device-entry'), data);
      if (form) { checkCsrf(ctx, req, data.csrf_token); csrf = csrfFor(ctx, req); }
      typed = String(data.user_code);
      const { handle, view } = await lookUp(deps, typed, req.ip);
      const client = await clientOf(deps, view);
      const session = await sessionFor(deps, req, view);
      const shown = { handle, client_name: client.name, scope: view.scope.join(' '), user_code: displayUserCode(view.userCode) };
      if (session) return json ? { headers: NO_STORE, body: { ...shown, login_required: false } } : confirmPage(req, client, view, session, handle);
      const it = await signInFirst(deps, client, handle);
      if (json) return { headers: NO_STORE, body: { ...shown, login_required: true, interaction: it.id } };
      return { status: 303, headers: { Location: `/authorize/resume?interaction=${encodeURIComponent(it.id)}`, ...NO_STORE } };
    } catch (err) {
      if (!json && csrf && (err instanceof BadUserCode || err instanceof RateLimited)) {
        const p = deviceEntryPage({ csrf: csrf.token, userCode: typed, error: err.message, status: err.status });
        return { ...p, headers: { ...p.headers, ...err.headers } };
      }
      return failure(err, json, 'public');
    }
  }

  /** GET /device/confirm (the way back from sign-in): the consent page, or the sign-in again. */
  async function confirmForm(req: HttpRequest): Promise<Reply> {
    const deps = depsFor(base, req);
    const handle = (req.queryData as { handle: string }).handle;
    const view = await viewDeviceAuthorization(deps.redis, handle);
    if (!view || !view.pending || view.expired) return messagePage('Start again on your device', 'This device sign-in has expired or was already completed.');
    const client = await clientOf(deps, view);
    const session = await sessionFor(deps, req, view);
    if (!session) {
      const it = await signInFirst(deps, client, handle);
      return { status: 303, headers: { Location: `/authorize/resume?interaction=${encodeURIComponent(it.id)}`, ...NO_STORE } };
    }
    return confirmPage(req, client, view, session, handle);
  }

  /** POST /device/confirm: the signed-in person's decision, taken once while the code lives. */
  async function decide(req: HttpRequest): Promise<Reply> {
    const deps = depsFor(base, req);
    let json = wantsJson(req);
    try {
      const { form, data } = readBody(req);
      json = !form || json;
      validate(validatorFor('login.device-confirm'), data);
      if (form) checkCsrf(ctx, req, data.csrf_token);
      const handle = String(data.handle);
      const view = await viewDeviceAuthorization(deps.redis, handle);
      if (!view) throw new InvalidRequest('This device sign-in has expired or was already completed.');
      const session = await sessionFor(deps, req, view);
      if (!session) throw new Unauthorized('unauthorized', 'Sign in first.');
      const client = await clientOf(deps, view);
      const approve = data.decision === 'allow';
      // The consent is recorded first, so tokens are never issued without one the person can see and revoke.
      if (approve && view.pending && !view.expired) await grantConsent(deps, client, session.userId, view.scope);
      const outcome = await decideDeviceAuthorization(deps.redis, handle, approve ? { approve, user: { userId: session.userId, email: session.email, authTime: session.authTime } } : { approve });
      if (outcome !== 'ok') throw new InvalidRequest('This device sign-in has expired or was already completed.');
      if (json) return { headers: NO_STORE, body: { approved: approve } };
      return approve
        ? messagePage('Device connected', `${client.name} is now signed in on your device. You can close this page and return to it.`)
        : messagePage('Access denied', `${client.name} was not given access. You can close this page.`);
    } catch (err) { return failure(err, json, 'public'); }
  }

  return [
    {
      method: 'GET', path: '/device', iface: 'public', querySchema: 'query.device', html: true,
      doc: { summary: 'Device verification page (RFC 8628 3.3): enter the code a device shows', tags: ['login'], security: 'none', responses: { 200: null } },
      handler: entryForm,
    },
    {
      method: 'POST', path: '/device', iface: 'public', html: true, bodySchema: 'login.device-entry', bodyLimit: 8192,
      doc: { summary: 'Enter a device\'s user code: the consent page (or, signed out, the sign-in first); JSON for API clients', tags: ['login'], security: 'none', responses: { 200: 'login.device-entered', 303: null }, errors: [400, 403, 422, 429, 503] },
      handler: enter,
    },
    {
      method: 'GET', path: '/device/confirm', iface: 'public', querySchema: 'query.device-confirm', html: true,
      doc: { summary: 'The consent page of an entered device code, after sign-in', tags: ['login'], security: 'session', responses: { 200: null, 303: null }, errors: [403, 503] },
      handler: confirmForm,
    },
    {
      method: 'POST', path: '/device/confirm', iface: 'public', html: true, bodySchema: 'login.device-confirm', bodyLimit: 8192,
      doc: { summary: 'Allow or deny a device (the device\'s next poll gets its tokens or access_denied)', tags: ['login'], security: 'session', responses: { 200: 'login.device-decided' }, errors: [400, 403, 422, 503] },
      handler: decide,
    },
  ];
}
