import type { Deps } from '../deps.js';
import { OAuthError } from '../errors.js';
import type { TenantResources } from '../resources/cache.js';
import { isResourceUri } from '../resources/uri.js';
import { many, scopeList, type Form } from './params.js';

/**
 * RFC 8707 resource indicators, shared by every grant and by /authorize: which resources a request
 * names, whether they lie within what was granted, and the scope a token for them may carry.
 */

/** The `resource` values of a request (repeatable), each an absolute URI without a fragment, or invalid_target. */
export function resourcesOf(values: string | string[] | undefined): string[] {
  const list = values === undefined ? [] : (Array.isArray(values) ? values : [values]).filter((x) => x !== '');
  for (const r of list) if (!isResourceUri(r)) throw new OAuthError('invalid_target', 'A resource must be an absolute URI without a fragment.');
  return [...new Set(list)];
}

/** The targets a token request names: RFC 8693 `audience` and RFC 8707 `resource` alike. */
export function requestedTargets(form: Form): string[] {
  return [...new Set([...many(form, 'audience'), ...resourcesOf(form.resource)])];
}

/**
 * Targets within a grant (the resources of the authorization request, or of a refresh token's grant):
 * each one asked for must be among them (RFC 8707 2.2), else invalid_target; none asked for means
 * `fallback` (the grant's default audience).
 */
export function withinGrant(wanted: string[], granted: readonly string[], fallback: string[]): string[] {
  for (const w of wanted) {
    if (!granted.includes(w)) throw new OAuthError('invalid_target', `${JSON.stringify(w)} is not among the resources this grant was issued for.`);
  }
  return wanted.length ? wanted : fallback;
}

/**
 * The scope a token for `aud` carries: when every audience is a resource server registered in the
 * tenant, `scope` narrowed to the union of their scopes (downscoping per resource); an audience that is
 * not registered (an allowed audience of the client only) sets no bound. With `explicit` (the client
 * asked for this scope), nothing left is invalid_scope, as for any other narrowing.
 */
export function scopeWithin(servers: TenantResources, aud: readonly string[], scope: string, explicit: boolean): string {
  if (aud.length === 0 || servers.byIdentifier.size === 0) return scope;
  const allowed = new Set<string>();
  for (const a of aud) {
    const rs = servers.byIdentifier.get(a);
    if (!rs) return scope;
    for (const s of rs.scopes) allowed.add(s);
  }
  const want = scopeList(scope);
  const out = want.filter((s) => allowed.has(s));
  if (explicit && want.length > 0 && out.length === 0) throw new OAuthError('invalid_scope', 'None of the requested scopes is defined by the requested resource.');
  return out.join(' ');
}

/** scopeWithin the tenant's resource servers, read from the per-process cache (no query on a hit). */
export async function scopeForAudience(deps: Deps, tenantId: string, aud: readonly string[], scope: string, explicit: boolean): Promise<string> {
  return scopeWithin(await deps.tokens.resourceServers.get(tenantId), aud, scope, explicit);
}

/** An `aud` claim as a list. */
export function audList(aud: unknown): string[] {
  if (Array.isArray(aud)) return aud.filter((a): a is string => typeof a === 'string');
  return typeof aud === 'string' ? [aud] : [];
}
