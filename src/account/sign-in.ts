import { DEFAULT_TENANT_ID } from '../bootstrap.js';
import type { Deps } from '../deps.js';
import { Forbidden, NotFound } from '../errors.js';
import { serializeCookie, type HttpRequest } from '../http/request.js';
import type { Reply } from '../http/types.js';
import { saveReturnInteraction } from '../login/interaction.js';
import { REFUSED_STATUSES } from '../store/tenants.js';
import { ACCOUNT_CLIENT, ACCOUNT_CLIENT_NAME } from './session.js';

/** Remembers which tenant's account page this browser used, so a visit after the session ended signs in to the same tenant. */
export const ACCOUNT_TENANT_COOKIE = 'svc_account_tenant';
const ONE_YEAR = 365 * 24 * 3600;
const TENANT_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** The cookie naming the tenant of the page just rendered; undefined when the browser already holds it. */
export function rememberTenant(req: HttpRequest, tenantId: string, secure: boolean): string | undefined {
  if (req.cookies()[ACCOUNT_TENANT_COOKIE] === tenantId) return undefined;
  return serializeCookie(ACCOUNT_TENANT_COOKIE, tenantId, { path: '/account', maxAge: ONE_YEAR, httpOnly: true, secure, sameSite: 'Lax' });
}

/**
 * /account without a session, as Keycloak's account console does: the login page of the tenant (named by
 * `?tenant=`, else the one this browser last used the page in, else the default tenant), and back to
 * /account after the sign-in. The way back is fixed here, never taken from the request (no open redirect).
 */
export async function accountSignIn(deps: Deps, req: HttpRequest): Promise<Reply> {
  const tenantId = req.searchParams().get('tenant') || req.cookies()[ACCOUNT_TENANT_COOKIE] || DEFAULT_TENANT_ID;
  // Thrown: the error page to a browser, the spec's error body to an API client.
  const unknown = () => new NotFound('not_found', 'This organization is not known to this server. Sign in through an application that uses it, then return to this page.');
  if (!TENANT_ID.test(tenantId)) throw unknown();
  const { status } = await deps.tokens.tenantSettings.get(tenantId);
  if (status === null) throw unknown();
  if (REFUSED_STATUSES.has(status) || await deps.tokens.revocations.tenantRefused(tenantId, deps.trace)) throw new Forbidden('forbidden', 'Sign-in is unavailable: this organization is suspended.');
  const it = await saveReturnInteraction(deps.redis, { tenantId, clientId: ACCOUNT_CLIENT, issuer: deps.config.issuer, returnTo: { path: '/account', name: ACCOUNT_CLIENT_NAME } });
  return { status: 303, headers: { Location: `/authorize/resume?interaction=${encodeURIComponent(it.id)}`, 'Cache-Control': 'no-store' } };
}
