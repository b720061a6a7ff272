import keySlot from 'cluster-key-slot';
import type { Cluster, Redis } from 'ioredis';
import { redisKeys } from '../store/redis-keys.js';
import { isCluster } from '../store/redis.js';

const SLOTS = 16384;

/**
 * Where the "revocation record is loaded" sentinel lives. On one Redis it is one key. On a Redis Cluster
 * there is one per hash slot, in that slot (`rv:loaded:{<tag>}` with a tag chosen to hash there), and a
 * check reads the sentinels of the slots its keys live in, in the same MGET part as those keys. So while
 * a master is down (or came back empty) only the tokens whose revocation keys it holds are refused; one
 * sentinel for the whole record made a failover of its master refuse every token of every tenant.
 */
export class RevocationSentinels {
  private readonly cluster: boolean;
  private tags: string[] | undefined;

  constructor(private readonly redis: Redis) {
    this.cluster = isCluster(redis);
  }

  /** The sentinel guarding a key (written without keyPrefix, hash-tagged as every revocation key is). */
  of(key: string): string {
    if (!this.cluster) return redisKeys.revocationLoaded;
    return redisKeys.revocationLoadedSlot(this.tagFor(keySlot(key)));
  }

  /** Every sentinel the refill writes last. */
  all(): string[] {
    if (!this.cluster) return [redisKeys.revocationLoaded];
    const out = new Array<string>(SLOTS);
    for (let s = 0; s < SLOTS; s++) out[s] = redisKeys.revocationLoadedSlot(this.tagFor(s));
    return out;
  }

  /**
   * The sentinels readiness reads: on a cluster, that of the first slot of each run of slots one master
   * serves (a master that lost its data lost them all), so a probe is a few keys, not 16,384.
   */
  probe(): string[] {
    if (!this.cluster) return [redisKeys.revocationLoaded];
    const map = (this.redis as unknown as Cluster).slots as unknown as string[][] | undefined;
    const firsts: number[] = [];
    let last: string | undefined;
    for (let s = 0; s < SLOTS; s++) {
      const owner = map?.[s]?.[0];
      if (s === 0 || owner !== last) firsts.push(s);
      last = owner;
    }
    return firsts.map((s) => redisKeys.revocationLoadedSlot(this.tagFor(s)));
  }

  /** A short tag hashing to each slot, found once per process (about 170,000 CRC16s of short strings). */
  private tagFor(slot: number): string {
    if (!this.tags) {
      const tags = new Array<string>(SLOTS);
      for (let i = 0, found = 0; found < SLOTS; i++) {
        const tag = i.toString(36);
        const s = keySlot(tag);
        if (tags[s] === undefined) { tags[s] = tag; found++; }
      }
      this.tags = tags;
    }
    return this.tags[slot]!;
  }
}
