import type { Redis } from 'ioredis';
import { ServiceUnavailable } from '../../errors.js';
import { redisKeys } from '../../store/redis-keys.js';
import { randomToken } from '../../store/ids.js';
import { sha256b64url } from '../../tokens/secrets.js';
import type { Query } from './types.js';

/** RFC 9126 2.2: the request_uri's URN prefix, then an unguessable reference. */
export const REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:';
/** Seconds a pushed request may be started at /authorize (RFC 9126 asks for a short life; FAPI 2.0 for at most 600). */
export const PUSHED_TTL = 60;

interface Stored { clientId: string; params: Query }

const unavailable = (err: unknown) => new ServiceUnavailable('Pushed authorization requests cannot be read right now.', 1, err);

/** Stores a validated authorization request pushed by its client; answers its request_uri. */
export async function savePushed(redis: Redis, clientId: string, params: Query): Promise<string> {
  const uri = `${REQUEST_URI_PREFIX}${randomToken(32)}`;
  const rec: Stored = { clientId, params };
  await redis.set(redisKeys.pushedRequest(sha256b64url(uri)), JSON.stringify(rec), 'EX', PUSHED_TTL).catch((err) => { throw unavailable(err); });
  return uri;
}

/**
 * The pushed request a request_uri names, and the id to drop it by once its code is issued; null when
 * unknown, expired or used. It stays readable until then, so reloading the login page works.
 */
export async function loadPushed(redis: Redis, uri: string): Promise<(Stored & { id: string }) | null> {
  if (!uri.startsWith(REQUEST_URI_PREFIX) || uri.length > 200) return null;
  const id = sha256b64url(uri);
  const raw = await redis.get(redisKeys.pushedRequest(id)).catch((err) => { throw unavailable(err); });
  return raw === null ? null : { ...(JSON.parse(raw) as Stored), id };
}

/** Spends a pushed request (when its authorization code is issued): its request_uri is refused after. */
export async function dropPushed(redis: Redis, id: string): Promise<void> {
  await redis.del(redisKeys.pushedRequest(id)).catch((err) => { throw unavailable(err); });
}
