import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { redisKeys } from '../store/redis-keys.js';
import type { Session } from './sessions.js';

/**
 * Which login sessions (the svc_session cookie) a user has, so an operator can list and end them.
 * A session is stored under the hash of its cookie value (src/login/sessions.ts); this keeps, per
 * tenant and user, a sorted set of those hashes scored by expiry. Members that expired or whose
 * session is gone are pruned when the set is read. Operators see a public id derived one-way from the
 * hash: it names the session in the admin API but can neither sign in nor name the Redis key.
 */

/** At most this many sessions are listed (newest first); a revocation still finds any of them. */
export const LISTED_SESSIONS = 100;

const PUBLIC_ID = /^lses_[A-Za-z0-9_-]{22}$/;

/** The public id of a session: a domain-separated hash of its key hash (128 bits). */
export function publicSessionId(sidHash: string): string {
  return `lses_${createHash('sha256').update(`svc login session id\0${sidHash}`).digest('base64url').slice(0, 22)}`;
}

/**
 * Adds a new session to its user's set, pruning expired members. Three plain commands sent in the
 * caller's tick, so auto-pipelining writes them with the session's SET (one write, one round trip; a
 * MULTI would leave as a write of its own). No transaction is needed: they run in order on the one
 * connection, and a partial failure only leaves a member that the next read prunes.
 */
export async function indexSession(redis: Redis, sidHash: string, s: Session): Promise<void> {
  const key = redisKeys.userLoginSessions(s.tenantId, s.userId);
  // Every session lives the same time, so the newest one decides when the whole set may go.
  await Promise.all([
    redis.zadd(key, s.expiresAt, sidHash),
    redis.zremrangebyscore(key, '-inf', Math.floor(Date.now() / 1000)),
    redis.expireat(key, s.expiresAt),
  ]);
}

/** Deletes a session by its key hash and takes it out of its user's set (read from the session itself). */
export async function dropSession(redis: Redis, sidHash: string): Promise<void> {
  const raw = await redis.getdel(redisKeys.session(sidHash));
  if (!raw) return;
  const s = JSON.parse(raw) as Session;
  await redis.zrem(redisKeys.userLoginSessions(s.tenantId, s.userId), sidHash);
}

/** Deletes every indexed session of the user, and the index: their cookies no longer sign in. */
export async function dropUserSessions(redis: Redis, tenantId: string, userId: string): Promise<void> {
  const key = redisKeys.userLoginSessions(tenantId, userId);
  const hashes = await redis.zrange(key, 0, -1);
  // The session keys are in other slots: one DEL each, sent together with the index's.
  await Promise.all([...hashes.map((h) => redis.del(redisKeys.session(h))), redis.del(key)]);
}

export interface IndexedSession { id: string; authTime: number; expiresAt: number }

/** The user's live login sessions, newest sign-in first (at most LISTED_SESSIONS); prunes what is gone. */
export async function listUserSessions(redis: Redis, tenantId: string, userId: string): Promise<IndexedSession[]> {
  const key = redisKeys.userLoginSessions(tenantId, userId);
  const now = Math.floor(Date.now() / 1000);
  const hashes = await redis.zrevrangebyscore(key, '+inf', `(${now}`, 'LIMIT', 0, LISTED_SESSIONS);
  // The session keys are in other slots: one GET each, sent together.
  const raws = await Promise.all(hashes.map((h) => redis.get(redisKeys.session(h))));
  const out: IndexedSession[] = [];
  const gone: string[] = [];
  hashes.forEach((h, i) => {
    const s = raws[i] ? (JSON.parse(raws[i]!) as Session) : null;
    if (!s || s.tenantId !== tenantId || s.userId !== userId || s.expiresAt <= now) gone.push(h);
    else out.push({ id: publicSessionId(h), authTime: s.authTime, expiresAt: s.expiresAt });
  });
  const prune = redis.multi().zremrangebyscore(key, '-inf', now);
  if (gone.length) prune.zrem(key, ...gone);
  await prune.exec();
  return out.sort((a, b) => b.authTime - a.authTime);
}

/** Ends one of the user's sessions by its public id: the cookie no longer signs in. False when there is none. */
export async function revokeUserSession(redis: Redis, tenantId: string, userId: string, publicId: string): Promise<boolean> {
  if (!PUBLIC_ID.test(publicId)) return false;
  const key = redisKeys.userLoginSessions(tenantId, userId);
  const sidHash = (await redis.zrangebyscore(key, `(${Math.floor(Date.now() / 1000)}`, '+inf')).find((h) => publicSessionId(h) === publicId);
  if (sidHash === undefined) return false;
  const raw = await redis.get(redisKeys.session(sidHash));
  const s = raw ? (JSON.parse(raw) as Session) : null;
  // The set is this user's, so the session is too; checked all the same before it is ended.
  if (!s || s.tenantId !== tenantId || s.userId !== userId) {
    await redis.zrem(key, sidHash);
    return false;
  }
  await Promise.all([redis.del(redisKeys.session(sidHash)), redis.zrem(key, sidHash)]);
  return true;
}
