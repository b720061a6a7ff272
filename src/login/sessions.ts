import type { Redis } from 'ioredis';
import type { Deps } from '../deps.js';
import { ServiceUnavailable } from '../errors.js';
import { serializeCookie } from '../http/request.js';
import { randomToken } from '../store/ids.js';
import { redisKeys } from '../store/redis-keys.js';
import { sha256 } from './keys.js';
import { dropSession, indexSession } from './user-session-index.js';
import { LOGIN, SESSION_COOKIE } from './options.js';

/** A login session: who, in which tenant, since when (epoch seconds). */
export interface Session { tenantId: string; userId: string; email: string; authTime: number; expiresAt: number }

/** Starts a session: a random id in the cookie, only its hash as the Redis key. */
export async function createSession(redis: Redis, s: Omit<Session, 'expiresAt'>): Promise<{ id: string; session: Session }> {
  const id = randomToken(32);
  const session: Session = { ...s, expiresAt: s.authTime + LOGIN.sessionTtlSeconds };
  try {
    const hash = sha256(id);
    // The user's session index is written beside the session, in parallel (src/login/user-session-index.ts).
    await Promise.all([redis.set(redisKeys.session(hash), JSON.stringify(session), 'EX', LOGIN.sessionTtlSeconds), indexSession(redis, hash, session)]);
  } catch (err) {
    throw new ServiceUnavailable('The session could not be started; retry shortly.', 1, err);
  }
  return { id, session };
}

/**
 * The session named by a cookie value, or null when absent, expired, or ended by a lock, suspension or
 * deletion of its user since it began (the user's `login` mark, src/login/end-sessions.ts: it also
 * covers sessions the per-user index never saw). Redis failures fail closed.
 */
export async function readSession(deps: Pick<Deps, 'redis' | 'tokens' | 'trace'>, id: string | undefined): Promise<Session | null> {
  const s = await readSessionRecord(deps.redis, id);
  if (!s || !(await deps.tokens.revocations.signInEnded(s.tenantId, s.userId, s.authTime, deps.trace))) return s;
  void destroySession(deps.redis, id).catch(() => {});
  return null;
}

/**
 * The stored session alone, not checked against its user's `login` mark: only for a caller that checks
 * it itself in a later round trip (GET /authorize: completeAuthorization reads it beside the code write).
 */
export async function readSessionRecord(redis: Redis, id: string | undefined): Promise<Session | null> {
  if (!id || id.length !== 43) return null;
  let raw: string | null;
  try { raw = await redis.get(redisKeys.session(sha256(id))); } catch (err) { throw new ServiceUnavailable('Sessions cannot be read right now.', 1, err); }
  if (!raw) return null;
  const s = JSON.parse(raw) as Session;
  return s.expiresAt > Date.now() / 1000 ? s : null;
}

export async function destroySession(redis: Redis, id: string | undefined): Promise<void> {
  if (id && id.length === 43) await dropSession(redis, sha256(id));
}

export function sessionCookie(id: string, secure: boolean): string {
  return serializeCookie(SESSION_COOKIE, id, { maxAge: LOGIN.sessionTtlSeconds, httpOnly: true, secure, sameSite: 'Lax' });
}

export function clearSessionCookie(secure: boolean): string {
  return serializeCookie(SESSION_COOKIE, '', { maxAge: 0, httpOnly: true, secure, sameSite: 'Lax' });
}
