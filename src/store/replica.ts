import type { Redis } from 'ioredis';
import { redisKeys } from './redis-keys.js';
import type { Sql } from '../sql.js';

/** How long the last admin change's WAL position is remembered: a replica further behind than this serves stale reads. */
const FENCE_MS = 5 * 60_000;

/** SET the key to ARGV[1] unless it already holds a higher number; either way it lives ARGV[2] ms more. */
const RAISE = `local c = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > c then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1`;

/** A `pg_lsn` text (`16/B374D848`) as a number of bytes (positions stay far below 2^53 for decades). */
export function lsnValue(lsn: string): number {
  const [hi, lo] = lsn.split('/');
  return parseInt(hi!, 16) * 2 ** 32 + parseInt(lo!, 16);
}

/**
 * A Postgres streaming replica (DATABASE_READ_URL) for the admin interface's reads, with read-your-writes:
 * after each admin change the primary's WAL position is recorded in Redis (the "fence", one key for all
 * processes and nodes), and a read goes to the replica only once it has replayed past the fence. A read
 * with no fence, or whose fence the replica has passed, costs one Redis GET more than on the primary; a
 * replica behind the fence costs one short query on it, and the read then runs on the primary.
 */
export class ReadReplica {
  /** The highest replay position this process has seen on the replica (positions only grow). */
  private replayed = 0;

  constructor(readonly sql: Sql, private readonly primary: Sql, private readonly redis: Redis) {}

  /** After a committed admin change: readers must not use the replica until it has replayed this far. */
  async wrote(): Promise<void> {
    const [row] = await this.primary<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`;
    // Only ever raised (a slower writer must not lower another's fence), in one step on the one key.
    await this.redis.eval(RAISE, 1, redisKeys.replicaFence, String(lsnValue(row!.lsn)), String(FENCE_MS));
  }

  /** The database an admin read should use now: the replica when it has caught up with the last admin change. */
  async forRead(): Promise<Sql> {
    let fence: number;
    try {
      const v = await this.redis.get(redisKeys.replicaFence);
      if (v === null) return this.sql;
      fence = Number(v);
    } catch {
      // Without the fence, only the primary is sure to be current.
      return this.primary;
    }
    if (fence <= this.replayed) return this.sql;
    try {
      const [row] = await this.sql<{ lsn: string | null }[]>`select pg_last_wal_replay_lsn()::text as lsn`;
      if (row?.lsn) this.replayed = Math.max(this.replayed, lsnValue(row.lsn));
    } catch {
      return this.primary;
    }
    return fence <= this.replayed ? this.sql : this.primary;
  }
}
