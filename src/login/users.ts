import type { Deps } from '../deps.js';
import { Forbidden } from '../errors.js';
import { declareEvents } from '../events/declare.js';
import { endLoginSessions } from './end-sessions.js';
import type { User } from '../store/users.js';

/** What an email-code sign-in writes: first logins create the user; refusals and guessing are told too. */
export const loginEvents = declareEvents(['user.created', 'user.updated', 'auth.login', 'auth.login_failed', 'security.suspicious_activity']);

/**
 * The Postgres side of a successful code check, in one transaction: find the user or create them
 * (first login, with `user.created`), refuse suspended or locked users (with `auth.login_failed`), and
 * record `auth.login`. Events are written to the outbox in the same transaction as the change.
 */
export async function loginUser(deps: Deps, a: { tenantId: string; email: string; clientId: string }): Promise<User> {
  // Round trips are the cost here (login is a hot path): one statement finds and stamps the user or
  // creates it, one more inserts the events.
  const login = (u: User) => ({ user_id: u.id, client_id: a.clientId, method: 'email_code' });
  const outcome = await deps.store.transaction(a.tenantId, async ({ users }, tx) => {
    // One statement: the returning user stamped, or the new user created (src/store/users.ts).
    const done = await users.loginOrCreate({ email: a.email, emailVerified: true, loggedIn: true });
    if (done?.created) {
      await loginEvents.emitAll(tx, a.tenantId, [
        { event: 'user.created', data: { user_id: done.user.id, email: done.user.email, source: 'email_code' } },
        { event: 'auth.login', data: login(done.user) },
      ]);
      return { user: done.user, refused: null };
    }
    if (done) {
      await loginEvents.emit(tx, a.tenantId, 'auth.login', login(done.user));
      return { user: done.user, refused: null };
    }
    // The address exists but its user is not active (or a concurrent first login just created it).
    const user = await users.getByEmail(a.email);
    if (!user) throw new Error('user neither found nor created');
    if (user.status !== 'active') {
      await loginEvents.emit(tx, a.tenantId, 'auth.login_failed', { user_id: user.id, client_id: a.clientId, method: 'email_code', reason: `user_${user.status}` });
      return { user, refused: user.status as 'suspended' | 'locked' };
    }
    const again = await users.touchActiveLogin(a.email);
    await loginEvents.emit(tx, a.tenantId, 'auth.login', login(again ?? user));
    return { user: again ?? user, refused: null };
  });
  // The refusal is thrown after commit so its event is kept.
  if (outcome.refused === 'suspended') throw new Forbidden('user_suspended', 'This account is suspended.');
  if (outcome.refused === 'locked') throw new Forbidden('user_locked', 'This account is locked.');
  return outcome.user;
}

/**
 * A failed code check: `auth.login_failed` for the tenant the code was requested for. The failure that
 * locks the user ends their login sessions too, as an admin lock does.
 */
export async function recordLoginFailure(deps: Deps, a: { tenantId: string; clientId: string; email: string; reason: string }): Promise<void> {
  const lockedUser = await deps.store.transaction(a.tenantId, async ({ users }, tx) => {
    // Wrong codes count toward the tenant's automatic lock (admin setting login-lockout).
    const counted = a.reason === 'invalid_code' || a.reason === 'too_many_attempts' ? await users.registerFailedLogin(a.email) : null;
    const user = counted?.user ?? await users.getByEmail(a.email);
    if (counted?.locked) {
      await loginEvents.emit(tx, a.tenantId, 'user.updated', { user_id: counted.user.id, email: counted.user.email, changed: ['status'], status: 'locked', reason: 'too_many_failed_logins' });
    }
    await loginEvents.emit(tx, a.tenantId, 'auth.login_failed', { ...(user ? { user_id: user.id } : {}), client_id: a.clientId, method: 'email_code', reason: a.reason });
    // A code burned by repeated wrong guesses looks like guessing: tell security receivers too.
    if (a.reason === 'too_many_attempts') {
      await loginEvents.emit(tx, a.tenantId, 'security.suspicious_activity', { ...(user ? { user_id: user.id } : {}), client_id: a.clientId, reason: 'one_time_code_guessing' });
    }
    return counted?.locked ? counted.user.id : null;
  });
  if (lockedUser) await endLoginSessions(deps, a.tenantId, lockedUser);
}
