import type { Redis } from 'ioredis';
import { ServiceUnavailable } from '../errors.js';
import { redisKeys } from '../store/redis-keys.js';
import { sha256b64url } from '../tokens/secrets.js';
import { PROOF_MAX_AGE, PROOF_MAX_SKEW } from './proof.js';

/** A jti is remembered as long as a proof carrying it can be accepted, and a second more. */
const REPLAY_TTL = PROOF_MAX_AGE + PROOF_MAX_SKEW + 1;

/**
 * Records a proof's jti for `scope` (the client at /token and /par, the bound key at our resources):
 * SET NX, so 'OK' for a first use and null for a replay. Started as early as the caller can, so it
 * shares the request's Redis write; its answer is read with proofFresh().
 */
export function spendProofJti(redis: Redis, scope: string, jti: string): Promise<'OK' | null> {
  const set = redis.set(redisKeys.dpopJti(scope, sha256b64url(jti)), '1', 'EX', REPLAY_TTL, 'NX') as Promise<'OK' | null>;
  set.catch(() => {}); // read by proofFresh(), unless the request fails earlier
  return set;
}

/** Whether the proof was used for the first time; fails closed (503) when its use cannot be recorded. */
export async function proofFresh(spent: Promise<'OK' | null>): Promise<boolean> {
  try { return (await spent) !== null; } catch (err) { throw new ServiceUnavailable('DPoP proofs cannot be checked right now.', 1, err); }
}
