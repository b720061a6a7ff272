import { depsFor } from '../request-deps.js';
import type { Deps } from '../deps.js';
import { Forbidden, Unauthorized } from '../errors.js';
import type { HttpRequest } from '../http/request.js';
import type { Reply, Route } from '../http/types.js';
import { userBearer } from '../login/bearer.js';
import { NO_STORE } from './params.js';

/** GET/POST /userinfo (OpenID Connect Core 5.3): the signed-in user's claims for an openid access token. */
export function userinfoRoutes(base: Deps): Route[] {
  const handler = async (req: HttpRequest): Promise<Reply> => {
      // A sampled request's view (its clients make spans under it); the process's deps otherwise.
      const deps = depsFor(base, req);
    const p = await userBearer(deps, req);
    if (!String(p.scope ?? '').split(' ').includes('openid')) throw new Forbidden('insufficient_scope', 'The access token lacks the openid scope.');
    const user = await deps.store.forTenant(p.tenant).users.get(p.sub!);
    if (!user) throw new Unauthorized('unauthorized', 'The user no longer exists.');
    if (user.status !== 'active') throw new Forbidden(user.status === 'locked' ? 'user_locked' : 'user_suspended', 'This account cannot be used.');
    const body: Record<string, unknown> = { sub: user.id, email: user.email, email_verified: user.email_verified };
    if (user.name) body.name = user.name;
    return { headers: NO_STORE, body };
  };
  const doc = { summary: 'OpenID Connect UserInfo', tags: ['login'], security: 'bearer' as const, responses: { 200: 'oauth.userinfo' }, errors: [401, 403] };
  return [
    { method: 'GET', path: '/userinfo', iface: 'oauth', doc, handler },
    { method: 'POST', path: '/userinfo', iface: 'oauth', body: 'none', doc, handler },
  ];
}
