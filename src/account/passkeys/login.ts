import { assertLoginMethod } from '../../tenants/settings-cache.js';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { authenticationOptions, PasskeyRefused, relyingParty, verifyAssertion } from './webauthn.js';
import { PASSKEY_JS } from '../assets/passkey-js.js';
import type { Deps } from '../../deps.js';
import { Forbidden, InvalidRequest } from '../../errors.js';
import { declareEvents } from '../../events/declare.js';
import { route } from '../../http/route.js';
import type { Route } from '../../http/types.js';
import { hitLimits } from '../../store/rate-limit.js';
import type { PasskeyRow } from '../../store/passkeys.js';
import type { User } from '../../store/users.js';
import { loadInteraction } from '../../login/interaction.js';
import { loginKeys } from '../../login/keys.js';
import { LOGIN } from '../../login/options.js';
import { PASSKEY_SCRIPT } from '../../login/pages.js';
import { createSession, sessionCookie } from '../../login/sessions.js';
import { loginContext } from '../../login/context.js';
import { depsFor } from '../../request-deps.js';

const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };
const expired = () => new InvalidRequest('This sign-in has expired. Return to the application and start again.');

/** What a passkey sign-in writes: the login, or its refusal (a counter gone backwards is also an alert). */
const passkeyLoginEvents = declareEvents(['auth.login', 'auth.login_failed', 'security.alert']);

/**
 * The Postgres side of a verified assertion, in one transaction: move the sign counter forward (a
 * concurrent use of the same counter value loses and is treated as a regression), refuse suspended or
 * locked users, and record auth.login with method "passkey".
 */
async function loginWithPasskey(deps: Deps, a: { tenantId: string; clientId: string; passkey: PasskeyRow; newCounter: number; backedUp: boolean }): Promise<User> {
  const outcome = await deps.store.transaction(a.tenantId, async ({ users, passkeys }, tx) => {
    const user = await users.get(a.passkey.user_id);
    if (!user) return { refused: 'unknown' as const };
    const base = { user_id: user.id, client_id: a.clientId, method: 'passkey' };
    if (!(await passkeys.recordUse(a.passkey.id, a.passkey.counter, a.newCounter, a.backedUp))) {
      await passkeyLoginEvents.emitAll(tx, a.tenantId, [
        { event: 'auth.login_failed', data: { ...base, reason: 'passkey_counter_regression' } },
        { event: 'security.alert', data: { user_id: user.id, client_id: a.clientId, reason: 'passkey_counter_regression', passkey_id: a.passkey.id } },
      ]);
      return { refused: 'counter' as const };
    }
    if (user.status !== 'active') {
      await passkeyLoginEvents.emit(tx, a.tenantId, 'auth.login_failed', { ...base, reason: `user_${user.status}` });
      return { refused: user.status as 'suspended' | 'locked' };
    }
    const touched = await users.touchActiveLogin(user.email);
    await passkeyLoginEvents.emit(tx, a.tenantId, 'auth.login', { ...base, passkey_id: a.passkey.id });
    return { refused: null, user: touched ?? user };
  });
  // Refusals are thrown after commit so their events are kept.
  if (outcome.refused === 'suspended') throw new Forbidden('user_suspended', 'This account is suspended.');
  if (outcome.refused === 'locked') throw new Forbidden('user_locked', 'This account is locked.');
  if (outcome.refused === 'counter') throw new PasskeyRefused('counter_regression', 'This passkey cannot be used: its signature counter went backwards.');
  if (outcome.refused === 'unknown') throw new PasskeyRefused('unknown_credential');
  return outcome.user!;
}

/**
 * Passkey sign-in beside the email code (login flow step 3 by another method): options for a pending
 * authorization request, then the assertion, which starts the same svc_session and continues that
 * request. Each ceremony counts against the same per-IP limit as code requests.
 */
export function passkeyLoginRoutes(base: Deps): Route[] {
  const { secureCookies } = loginContext(base);
  const rp = relyingParty(base.config);

  async function failed(deps: Deps, tenantId: string, clientId: string, userId: string | undefined, reason: string): Promise<void> {
    await deps.store.transaction(tenantId, async (_s, tx) => {
      await passkeyLoginEvents.emit(tx, tenantId, 'auth.login_failed', { ...(userId ? { user_id: userId } : {}), client_id: clientId, method: 'passkey', reason });
      if (reason === 'counter_regression') await passkeyLoginEvents.emit(tx, tenantId, 'security.alert', { ...(userId ? { user_id: userId } : {}), client_id: clientId, reason: 'passkey_counter_regression' });
    }).catch((err) => deps.log.warn({ err: (err as Error).message }, 'passkey failure event not recorded'));
  }

  return [
    route({
      method: 'POST', path: '/login/passkey/options', iface: 'oauth', body: 'json', bodySchema: 'account.ceremony-start', bodyLimit: 4096,
      doc: { summary: 'Passkey sign-in: WebAuthn options for a pending authorization request', tags: ['login'], security: 'none', responses: { 200: 'account.ceremony-options' }, errors: [400, 403, 429, 503] },
      handler: async ({ req, body }) => {
        // A sampled request's deps (its clients make spans under it; depsFor), the process's otherwise.
        const deps = depsFor(base, req);
        const it = await loadInteraction(deps.redis, body.interaction);
        if (!it) throw expired();
        await assertLoginMethod(deps.tokens.tenantSettings, it.request.tenantId, 'passkey');
        await hitLimits(deps.redis, [{ key: loginKeys.rateIp(req.ip || 'unknown'), limit: deps.config.loginIpLimitPerMinute, windowMs: 60_000 }], 'Too many sign-in attempts; try again later.');
        const options = await authenticationOptions(deps.redis, rp, { kind: 'login', tenantId: it.request.tenantId, interaction: it.id });
        return { headers: NO_STORE, body: { options } };
      },
    }),
    route({
      method: 'POST', path: '/login/passkey/verify', iface: 'oauth', body: 'json', bodySchema: 'account.passkey-assertion', bodyLimit: 32_768,
      doc: { summary: 'Passkey sign-in: check the assertion and start a session (cookie svc_session)', tags: ['login'], security: 'none', responses: { 200: 'account.passkey-signed-in' }, errors: [400, 403, 503] },
      handler: async ({ req, body }) => {
        const deps = depsFor(base, req);
        const it = await loadInteraction(deps.redis, body.interaction);
        if (!it) throw expired();
        const { tenantId, clientId } = it.request;
        await assertLoginMethod(deps.tokens.tenantSettings, tenantId, 'passkey');
        const response = body.response as unknown as AuthenticationResponseJSON;
        const passkey = typeof response.id === 'string' ? await deps.store.forTenant(tenantId).passkeys.findByCredentialId(response.id) : null;
        if (!passkey) { await failed(deps, tenantId, clientId, undefined, 'unknown_credential'); throw new PasskeyRefused('unknown_credential', 'This passkey is not registered here.'); }
        const out = await verifyAssertion(deps.redis, rp, { kind: 'login', tenantId, interaction: it.id }, response, passkey);
        if (!out.ok) {
          deps.log.info({ reason: out.reason, detail: out.message }, 'passkey assertion refused');
          await failed(deps, tenantId, clientId, passkey.user_id, out.reason);
          throw new PasskeyRefused(out.reason, out.reason === 'counter_regression' ? 'This passkey cannot be used: its signature counter went backwards.' : undefined);
        }
        const user = await loginWithPasskey(deps, { tenantId, clientId, passkey, newCounter: out.newCounter, backedUp: out.backedUp });
        const authTime = Math.floor(Date.now() / 1000);
        const { id } = await createSession(deps.redis, { tenantId, userId: user.id, email: user.email, authTime });
        return {
          headers: NO_STORE, cookies: [sessionCookie(id, secureCookies)],
          body: { authenticated: true, sub: user.id, auth_time: authTime, expires_in: LOGIN.sessionTtlSeconds, continue: `${deps.config.issuer}/authorize/resume?interaction=${encodeURIComponent(it.id)}` },
        };
      },
    }),
    {
      method: 'GET', path: PASSKEY_SCRIPT, iface: 'public',
      handler: () => ({ type: 'text/javascript; charset=utf-8', headers: { 'Cache-Control': 'public, max-age=300', 'X-Content-Type-Options': 'nosniff' }, body: PASSKEY_JS }),
    },
  ];
}
