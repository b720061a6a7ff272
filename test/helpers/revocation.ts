import type { Redis } from 'ioredis';
import { RevocationSentinels } from '../../src/tokens/revocation-sentinels.js';

/**
 * Makes Redis look as if it lost the revocation record: every "loaded" sentinel goes (one key on one
 * Redis, one per slot on a cluster), so the next check refills from Postgres.
 */
export async function forgetRevocationState(redis: Redis): Promise<void> {
  const keys = new RevocationSentinels(redis).all();
  for (let i = 0; i < keys.length; i += 1000) await Promise.all(keys.slice(i, i + 1000).map((k) => redis.del(k)));
}
