import type { Redis } from 'ioredis';
import { ServiceUnavailable } from '../errors.js';
import type { AuthorizationRequest } from './authorize/types.js';
import { randomToken } from '../store/ids.js';
import { redisKeys } from '../store/redis-keys.js';
import { LOGIN } from './options.js';

/**
 * A pending sign-in, kept while the user signs in (the pages carry only its id): an application's
 * authorization request, or (with `returnTo`) a sign-in for a page of this server, which the browser
 * goes back to afterwards instead of to an application.
 */
export interface Interaction { id: string; request: AuthorizationRequest; createdAt: number; returnTo?: ReturnTo }

/** A page of this server that asked for a sign-in: its path (fixed by the server, never taken from a request) and its name on the login page. */
export interface ReturnTo { path: string; name: string }

export async function saveInteraction(redis: Redis, request: AuthorizationRequest, returnTo?: ReturnTo): Promise<Interaction> {
  const it: Interaction = { id: randomToken(18), request, createdAt: Math.floor(Date.now() / 1000), ...(returnTo ? { returnTo } : {}) };
  try {
    await redis.set(redisKeys.interaction(it.id), JSON.stringify(it), 'EX', LOGIN.interactionTtlSeconds);
  } catch (err) {
    throw new ServiceUnavailable('The sign-in could not be started; retry shortly.', 1, err);
  }
  return it;
}

export async function loadInteraction(redis: Redis, id: unknown): Promise<Interaction | null> {
  if (typeof id !== 'string' || !/^[A-Za-z0-9_-]{24}$/.test(id)) return null;
  const raw = await redis.get(redisKeys.interaction(id)).catch((err) => { throw new ServiceUnavailable('The sign-in state cannot be read.', 1, err); });
  return raw ? (JSON.parse(raw) as Interaction) : null;
}

export async function dropInteraction(redis: Redis, id: string): Promise<void> {
  await redis.del(redisKeys.interaction(id)).catch(() => {});
}

/**
 * A sign-in to a tenant for one of this server's own pages (the account page), not for an application:
 * `clientId` is what login events record as the client (it names no registered client), and after the
 * sign-in /authorize/resume sends the browser to `returnTo.path`.
 */
export function saveReturnInteraction(redis: Redis, a: { tenantId: string; clientId: string; issuer: string; returnTo: ReturnTo }): Promise<Interaction> {
  return saveInteraction(redis, {
    tenantId: a.tenantId, clientId: a.clientId, redirectUri: `${a.issuer}${a.returnTo.path}`, redirectUriGiven: false, scope: [], prompt: [],
  }, a.returnTo);
}
