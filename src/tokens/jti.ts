import { randomFillSync, randomInt } from 'node:crypto';

/** The spec's token identifier: g<generation>:<region>:<shard>:<random>. */
export interface Jti { generation: number; region: string; shard: number; random: string }

const JTI_RE = /^g(\d{1,9}):([a-z0-9-]{1,32}):(\d{1,5}):([A-Za-z0-9_-]{8,64})$/;

// CSPRNG bytes drawn 4 KiB at a time and handed out once each (as Node's randomUUID does): a call into
// OpenSSL per token was 5% of the issuing thread's time (perf/RESULTS.md run 50).
const pool = Buffer.allocUnsafe(4096);
let used = pool.length;

/** 16 fresh random bytes as base64url (22 characters). */
function random16(): string {
  if (used + 16 > pool.length) { randomFillSync(pool); used = 0; }
  const s = pool.toString('base64url', used, used + 16);
  pool.fill(0, used, used + 16); // handed out: not kept in memory
  used += 16;
  return s;
}

export function newJti(generation: number, region: string, shardCount: number): string {
  return `g${generation}:${region}:${randomInt(shardCount)}:${random16()}`;
}

export function parseJti(jti: unknown): Jti | null {
  if (typeof jti !== 'string') return null;
  const m = JTI_RE.exec(jti);
  if (!m) return null;
  return { generation: Number(m[1]), region: m[2]!, shard: Number(m[3]), random: m[4]! };
}
