import { randomBytes, randomInt } from 'node:crypto';

/** The spec's token identifier: g<generation>:<region>:<shard>:<random>. */
export interface Jti { generation: number; region: string; shard: number; random: string }

const JTI_RE = /^g(\d{1,9}):([a-z0-9-]{1,32}):(\d{1,5}):([A-Za-z0-9_-]{8,64})$/;

export function newJti(generation: number, region: string, shardCount: number): string {
  return `g${generation}:${region}:${randomInt(shardCount)}:${randomBytes(16).toString('base64url')}`;
}

export function parseJti(jti: unknown): Jti | null {
  if (typeof jti !== 'string') return null;
  const m = JTI_RE.exec(jti);
  if (!m) return null;
  return { generation: Number(m[1]), region: m[2]!, shard: Number(m[3]), random: m[4]! };
}
