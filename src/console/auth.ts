import * as oauth from 'oauth4webapi';

/**
 * Sign-in to svc itself: OpenID Connect authorization code + PKCE with the tenant's public
 * `<tenant>-console` client (oauth4webapi does the protocol). Tokens live in this module's memory only,
 * never in storage: a reload signs in again (svc's own session cookie makes that one redirect). Only
 * the PKCE verifier, state and nonce of a sign-in in flight wait in sessionStorage across the redirect.
 */

export interface Session {
  tenant: string;
  accessToken: string;
  idToken: string;
  email: string;
  /** What the access token says the person may do: for showing and hiding only; the server decides. */
  permissions: string[];
  platform: boolean;
  expiresAt: number;
}

const PENDING = 'svc-console-signin';
const LAST_TENANT = 'svc-console-tenant';
const issuer = new URL(location.origin);
/** svc in development runs on http://localhost: oauth4webapi refuses plain http unless told. */
const insecure = issuer.protocol === 'http:' ? { [oauth.allowInsecureRequests]: true } : {};
const redirectUri = `${location.origin}/console/callback`;
export const signedOutUri = `${location.origin}/console/signed-out`;

let as: oauth.AuthorizationServer | undefined;
let session: Session | null = null;
let refreshToken: string | undefined;
let renewal: ReturnType<typeof setTimeout> | undefined;
let renewing: Promise<boolean> | undefined;
/** Set when a session ended because it could not be renewed: the sign-in screen says so. */
let expired = false;
const listeners = new Set<() => void>();

const clientOf = (tenant: string): oauth.Client => ({ client_id: `${tenant}-console` });

async function server(): Promise<oauth.AuthorizationServer> {
  as ??= await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...insecure }));
  return as;
}

export function subscribe(fn: () => void): () => void { listeners.add(fn); return () => listeners.delete(fn); }
export function currentSession(): Session | null { return session; }
export function lastTenant(): string { return localStorage.getItem(LAST_TENANT) ?? ''; }
export function sessionExpired(): boolean { return expired; }

function set(next: Session | null): void {
  session = next;
  if (next) expired = false;
  for (const fn of listeners) fn();
}

/** Starts a sign-in: to svc's /authorize, back at /console/callback. */
export async function signIn(tenant: string, returnTo = '/'): Promise<void> {
  const a = await server();
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const nonce = oauth.generateRandomNonce();
  sessionStorage.setItem(PENDING, JSON.stringify({ tenant, verifier, state, nonce, returnTo }));
  localStorage.setItem(LAST_TENANT, tenant);
  const url = new URL(a.authorization_endpoint!);
  url.search = new URLSearchParams({
    response_type: 'code', client_id: clientOf(tenant).client_id, redirect_uri: redirectUri, scope: 'openid email admin',
    state, nonce, code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  }).toString();
  location.assign(url.href);
}

/** Finishes a sign-in at /console/callback; answers where to go next. */
export async function completeSignIn(callback: URL): Promise<string> {
  const raw = sessionStorage.getItem(PENDING);
  sessionStorage.removeItem(PENDING);
  if (!raw) throw new Error('No sign-in was started in this tab. Sign in again.');
  const pending = JSON.parse(raw) as { tenant: string; verifier: string; state: string; nonce: string; returnTo: string };
  const a = await server();
  const client = clientOf(pending.tenant);
  const params = oauth.validateAuthResponse(a, client, callback, pending.state);
  const res = await oauth.authorizationCodeGrantRequest(a, client, oauth.None(), params, redirectUri, pending.verifier, insecure);
  const tokens = await oauth.processAuthorizationCodeResponse(a, client, res, { expectedNonce: pending.nonce, requireIdToken: true });
  accept(pending.tenant, tokens);
  return pending.returnTo;
}

function accept(tenant: string, tokens: oauth.TokenEndpointResponse): void {
  const claims = oauth.getValidatedIdTokenClaims(tokens);
  const at = decodePayload(tokens.access_token);
  const scopes = Array.isArray(at.tenant_scopes) ? (at.tenant_scopes as Array<{ scope_mode?: string }>) : [];
  const lifetime = tokens.expires_in ?? 300;
  refreshToken = tokens.refresh_token ?? refreshToken;
  set({
    tenant,
    accessToken: tokens.access_token,
    idToken: tokens.id_token ?? session?.idToken ?? '',
    email: typeof claims?.email === 'string' ? claims.email : session?.email ?? String(at.sub ?? ''),
    permissions: Array.isArray(at.permissions) ? at.permissions.filter((p): p is string => typeof p === 'string') : [],
    platform: scopes.some((s) => s.scope_mode === 'all'),
    expiresAt: Date.now() + lifetime * 1000,
  });
  scheduleRenewal(tenant, lifetime);
}

/** Silent renewal: the refresh token (rotated by svc on every use) buys a new access token before this one ends. */
function scheduleRenewal(tenant: string, lifetime: number): void {
  clearTimeout(renewal);
  if (!refreshToken) return;
  const wait = Math.max(1, lifetime * 0.75) * 1000;
  renewal = setTimeout(() => { void renew(tenant); }, wait);
}

/**
 * Renews now (one renewal at a time, shared by whoever asks): true when a new access token arrived.
 * svc refusing the refresh token (spent, revoked, expired) ends the session and the sign-in screen says
 * it expired; a network failure keeps the session, so the next call that needs a token tries again.
 */
export function renew(tenant: string): Promise<boolean> {
  renewing ??= (async () => {
    if (!refreshToken) return false;
    try {
      const a = await server();
      const client = clientOf(tenant);
      const res = await oauth.refreshTokenGrantRequest(a, client, oauth.None(), refreshToken, insecure);
      accept(tenant, await oauth.processRefreshTokenResponse(a, client, res));
      return true;
    } catch (err) {
      if (!(err instanceof oauth.ResponseBodyError)) return false;
      clearTimeout(renewal);
      refreshToken = undefined;
      expired = true;
      set(null);
      return false;
    }
  })().finally(() => { renewing = undefined; });
  return renewing;
}

/** Signs out of svc too (RP-initiated logout), coming back at /console/signed-out. */
export async function signOut(): Promise<void> {
  const s = session;
  clearTimeout(renewal);
  refreshToken = undefined;
  expired = false;
  set(null);
  if (!s) return;
  const a = await server();
  const url = new URL(a.end_session_endpoint ?? `${location.origin}/logout`);
  url.search = new URLSearchParams({ id_token_hint: s.idToken, client_id: clientOf(s.tenant).client_id, post_logout_redirect_uri: signedOutUri }).toString();
  location.assign(url.href);
}

/** The claims of a JWT access token, read (not verified: the server verifies) to shape the screens. */
function decodePayload(jwt: string): Record<string, unknown> {
  try {
    const part = jwt.split('.')[1] ?? '';
    const json = atob(part.replace(/-/g, '+').replace(/_/g, '/'));
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(json, (c) => c.charCodeAt(0)))) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** True when a granted permission covers `admin:<resource>:<action>` (the server's grammar, src/admin-access.ts). */
export function can(s: Session | null, needed: string): boolean {
  if (!s) return false;
  const want = needed.split(':');
  return s.permissions.some((g) => {
    const have = g.split(':');
    for (let i = 0; i < have.length; i++) {
      if (have[i] === '*' && i === have.length - 1) return true;
      if (i >= want.length || (have[i] !== '*' && have[i] !== want[i])) return false;
    }
    return have.length === want.length;
  });
}
