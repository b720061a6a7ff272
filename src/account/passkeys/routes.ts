import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { Deps } from '../../deps.js';
import type { HttpRequest } from '../../http/request.js';
import { route } from '../../http/route.js';
import type { Route } from '../../http/types.js';
import type { Session } from '../../login/sessions.js';
import { accountSession, checkOrigin } from '../session.js';
import { loginContext } from '../../login/context.js';
import { SESSION_COOKIE } from '../../login/options.js';
import { createSession, destroySession, sessionCookie } from '../../login/sessions.js';
import { depsFor } from '../../request-deps.js';
import { deletePasskey, finishReauth, finishRegistration, renamePasskey, startReauth, startRegistration } from './service.js';
import { passkeyView } from './view.js';

const NO_STORE = { 'Cache-Control': 'no-store' };

/**
 * The account page's passkey API (cookie svc_session, JSON only, Origin checked): registration, the
 * spec's rename, and delete. Credentials are checked before the body is read, so a caller without a
 * session gets 401 rather than a verdict on its body.
 */
export function passkeyApiRoutes(base: Deps): Route[] {
  const secureCookies = loginContext(base).secureCookies;
  const sessions = new WeakMap<HttpRequest, Session>();
  // Each step takes a sampled request's deps (its clients make spans under it; depsFor), the process's otherwise.
  const authenticate = async (req: HttpRequest) => { checkOrigin(base, req); sessions.set(req, await accountSession(depsFor(base, req), req)); };
  const session = (req: HttpRequest) => sessions.get(req)!;
  return [
    route({
      method: 'POST', path: '/api/account/passkeys/registration-options', iface: 'admin', body: 'json', bodySchema: 'account.ceremony-start', bodyLimit: 4096, authenticate,
      doc: { summary: 'WebAuthn registration options for the signed-in user (sign-in within 5 minutes)', tags: ['account'], security: 'session', responses: { 200: 'account.ceremony-options' }, errors: [401, 403] },
      handler: async ({ req }) => ({ headers: NO_STORE, body: { options: await startRegistration(depsFor(base, req), session(req)) } }),
    }),
    route({
      method: 'POST', path: '/api/account/passkeys', iface: 'admin', body: 'json', bodySchema: 'account.passkey-register', bodyLimit: 32_768, authenticate,
      doc: { summary: 'Register a passkey (the browser\'s answer to the registration options)', tags: ['account'], security: 'session', responses: { 201: 'account.passkey-reply' }, errors: [400, 401, 403, 409, 422] },
      handler: async ({ req, body }) => {
        const row = await finishRegistration(depsFor(base, req), session(req), body.response as unknown as RegistrationResponseJSON, body.device_name);
        return { status: 201, headers: NO_STORE, body: { passkey: passkeyView(row) } };
      },
    }),
    route({
      method: 'PATCH', path: '/api/account/passkeys/:id', iface: 'admin', body: 'json', bodySchema: 'account.passkey-rename', bodyLimit: 4096, authenticate,
      doc: { summary: 'Rename a passkey owned by the caller', tags: ['account'], security: 'session', responses: { 200: 'account.passkey-reply' }, errors: [400, 401, 403, 404, 422] },
      handler: async ({ req, params, body }) => ({ headers: NO_STORE, body: { passkey: passkeyView(await renamePasskey(depsFor(base, req), session(req), params.id!, body.device_name)) } }),
    }),
    route({
      method: 'POST', path: '/api/account/reauth/options', iface: 'admin', body: 'json', bodySchema: 'account.ceremony-start', bodyLimit: 4096, authenticate,
      doc: { summary: 'Re-authentication with one of the user\'s passkeys: WebAuthn options', tags: ['account'], security: 'session', responses: { 200: 'account.ceremony-options' }, errors: [400, 401, 403] },
      handler: async ({ req }) => ({ headers: NO_STORE, body: { options: await startReauth(depsFor(base, req), session(req)) } }),
    }),
    route({
      method: 'POST', path: '/api/account/reauth', iface: 'admin', body: 'json', bodySchema: 'account.passkey-assertion', bodyLimit: 32_768, authenticate,
      doc: { summary: 'Re-authentication with a passkey: a new session with a fresh sign-in time', tags: ['account'], security: 'session', responses: { 204: null }, errors: [400, 401, 403] },
      handler: async ({ req, body }) => {
        const deps = depsFor(base, req);
        const s = session(req);
        await finishReauth(deps, s, body.response as unknown as AuthenticationResponseJSON);
        await destroySession(deps.redis, req.cookies()[SESSION_COOKIE]);
        const { id } = await createSession(deps.redis, { tenantId: s.tenantId, userId: s.userId, email: s.email, authTime: Math.floor(Date.now() / 1000) });
        return { status: 204, headers: NO_STORE, cookies: [sessionCookie(id, secureCookies)] };
      },
    }),
    route({
      method: 'DELETE', path: '/api/account/passkeys/:id', iface: 'admin', body: 'none', authenticate,
      doc: { summary: 'Delete a passkey owned by the caller (sign-in within 5 minutes; never the last sign-in method)', tags: ['account'], security: 'session', responses: { 204: null }, errors: [401, 403, 404, 409] },
      handler: async ({ req, params }) => { await deletePasskey(depsFor(base, req), session(req), params.id!); return { status: 204, headers: NO_STORE }; },
    }),
  ];
}
