import type { Deps } from '../deps.js';
import { LOGIN } from './options.js';
import { dropUserSessions } from './user-session-index.js';

/**
 * Ends every login session of a user at once: called when the user leaves `active` (admin lock,
 * automatic lock, suspension, deletion). Durable first: the user's `login` mark (Postgres, then Redis,
 * refilled with the revocation state) refuses every sign-in made up to now, the sessions the per-user
 * index never saw (made before it existed) and the codes those sessions approved included; it lives as
 * long as a session can. Then the indexed sessions are deleted, so the admin list shows none.
 * Tokens already issued are not touched here: suspension and deletion cut them on their own.
 */
export async function endLoginSessions(deps: Deps, tenantId: string, userId: string): Promise<void> {
  await deps.tokens.revocations.revokeBefore(tenantId, 'login', userId, Date.now(), LOGIN.sessionTtlSeconds, deps.trace);
  await dropUserSessions(deps.redis, tenantId, userId);
}
