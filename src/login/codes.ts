import type { Redis } from 'ioredis';
import { ServiceUnavailable } from '../errors.js';
import { randomToken } from '../store/ids.js';
import { redisKeys } from '../store/redis-keys.js';
import { sha256 } from './keys.js';
import { LOGIN } from './options.js';

/** What an authorization code is bound to (RFC 6749 4.1.2), kept in Redis under the code's hash. */
export interface CodeRecord {
  tenantId: string;
  clientId: string;
  redirectUri: string;
  redirectUriGiven: boolean;
  scope: string[];
  nonce?: string;
  codeChallenge?: string;
  /** The DPoP key the code is bound to (RFC 9449 10: dpop_jkt at /authorize). */
  dpopJkt?: string;
  /** RFC 8707: the resources the authorization request named; the code's tokens are for these only. */
  resource?: string[];
  userId: string;
  email: string;
  authTime: number;
  /** A first-party client's code: its redemption records the consent (no page asked for it). */
  firstPartyConsent?: true;
  /** Epoch seconds after which the code cannot be redeemed. */
  exp: number;
}

/** What a redemption issued, so a replay can revoke it (RFC 6749 4.1.2). */
export interface IssuedFromCode { accessJti: string; accessExp: number; refreshFamily?: string }

const unavailable = (err: unknown) => new ServiceUnavailable('Authorization codes cannot be read right now.', 1, err);

export async function issueCode(redis: Redis, r: Omit<CodeRecord, 'exp'>): Promise<string> {
  const code = randomToken(32);
  const rec: CodeRecord = { ...r, exp: Math.floor(Date.now() / 1000) + LOGIN.authCodeTtlSeconds };
  // The record outlives the code's own lifetime so that a late replay is still recognised.
  await redis.set(redisKeys.authCode(sha256(code)), JSON.stringify(rec), 'EX', LOGIN.authCodeReplayWindowSeconds).catch((err) => { throw unavailable(err); });
  return code;
}

/** Deletes a code nobody was given (its consent turned out missing): best effort, it expires anyway. */
export async function dropCode(redis: Redis, code: string): Promise<void> {
  await redis.del(redisKeys.authCode(sha256(code))).catch(() => {});
}

export type Redemption =
  | { kind: 'first'; record: CodeRecord; codeHash: string }
  | { kind: 'replay'; record: CodeRecord; issued: IssuedFromCode | null }
  | { kind: 'unknown' };

/** Reads the record and claims the code in one transaction: exactly one caller ever gets `first`. */
export async function redeemCode(redis: Redis, code: string): Promise<Redemption> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(code)) return { kind: 'unknown' };
  const h = sha256(code);
  let res;
  try {
    res = await redis.multi()
      .get(redisKeys.authCode(h))
      .set(redisKeys.authCodeUsed(h), '1', 'EX', LOGIN.authCodeReplayWindowSeconds, 'NX')
      .get(redisKeys.authCodeIssued(h))
      .exec();
  } catch (err) { throw unavailable(err); }
  if (!res) throw unavailable(new Error('transaction aborted'));
  const raw = res[0]![1] as string | null;
  if (!raw) return { kind: 'unknown' };
  const record = JSON.parse(raw) as CodeRecord;
  if (res[1]![1] === 'OK') return { kind: 'first', record, codeHash: h };
  // Tells a first redemption still in progress that it must revoke what it is about to issue, then reads
  // what it issued again: this side writes before it reads, as recordIssued does, so a replay racing
  // the first redemption is seen by one of the two (read only in the MULTI above, both could miss).
  const again = await Promise.all([
    redis.set(redisKeys.authCodeReplayed(h), '1', 'EX', LOGIN.authCodeReplayWindowSeconds),
    redis.get(redisKeys.authCodeIssued(h)),
  ]).catch(() => null);
  const issued = again?.[1] ?? (res[2]![1] as string | null);
  return { kind: 'replay', record, issued: issued ? (JSON.parse(issued) as IssuedFromCode) : null };
}

/**
 * Remembers what the first redemption issued; true when a replay arrived meanwhile (then revoke it now).
 * Two plain commands sent in the caller's tick, in order on the one connection (auto-pipelined with the
 * caller's other reads: one write, where a MULTI leaves as a write of its own): `issued` is written
 * before `replayed` is read, and a replay writes `replayed` before it reads `issued` (redeemCode), so
 * at least one side sees the other. A failure is not the redemption's failure: only a later replay
 * cannot name the tokens.
 */
export async function recordIssued(redis: Redis, codeHash: string, issued: IssuedFromCode): Promise<boolean> {
  const res = await Promise.all([
    redis.set(redisKeys.authCodeIssued(codeHash), JSON.stringify(issued), 'EX', LOGIN.authCodeReplayWindowSeconds),
    redis.get(redisKeys.authCodeReplayed(codeHash)),
  ]).catch(() => null);
  return res?.[1] === '1';
}
