import type { Redis } from 'ioredis';
import { ServiceUnavailable } from '../errors.js';
import type { AuthorizationRequest } from './authorize/types.js';
import { randomToken } from '../store/ids.js';
import { redisKeys } from '../store/redis-keys.js';
import { LOGIN } from './options.js';

/** A pending authorization request, kept while the user signs in (the pages carry only its id). */
export interface Interaction { id: string; request: AuthorizationRequest; createdAt: number }

export async function saveInteraction(redis: Redis, request: AuthorizationRequest): Promise<Interaction> {
  const it: Interaction = { id: randomToken(18), request, createdAt: Math.floor(Date.now() / 1000) };
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
