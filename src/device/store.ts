import type { Redis } from 'ioredis';
import { ServiceUnavailable } from '../errors.js';
import { sha256b64url as sha256 } from '../tokens/secrets.js';
import { randomToken } from '../store/ids.js';
import { redisKeys } from '../store/redis-keys.js';
import { DEVICE } from './options.js';
import { newUserCode } from './user-code.js';

/**
 * Device authorizations in Redis: one hash per device code (under the code's hash; the code itself is
 * never stored) and one key per user code (under its hash) naming that hash. Every change is one
 * script on the one record key, so the state machine pending → approved → used / pending → denied is
 * decided atomically and the record needs no hash tag; the user-code key is read alone before it.
 */

/** Who approved a device authorization. */
export interface DeviceUser { userId: string; email: string; authTime: number }

/** What the verification page shows and checks. */
export interface DeviceView { tenantId: string; clientId: string; scope: string[]; userCode: string; pending: boolean; expired: boolean }

const unavailable = (err: unknown) => new ServiceUnavailable('Device authorizations cannot be read right now.', 1, err);
const DEVICE_CODE = /^[A-Za-z0-9_-]{43}$/;
/** The handle of a record on the verification pages: the device code's hash (it reveals nothing of the code). */
export const HANDLE = DEVICE_CODE;

/** Starts an authorization: a device code for the client, a user code for the person. */
export async function createDeviceAuthorization(redis: Redis, a: { tenantId: string; clientId: string; scope: string[]; ttlSeconds: number; intervalSeconds: number }): Promise<{ deviceCode: string; userCode: string }> {
  const deviceCode = randomToken(32);
  const h = sha256(deviceCode);
  try {
    let userCode: string | undefined;
    // A collision among live codes is rare (2.6·10^10 codes); a few tries make it vanish.
    // The user code outlives the code as long as the record does: a late entry is told "expired", not counted as a guess.
    const keep = a.ttlSeconds + DEVICE.keepAfterExpirySeconds;
    for (let i = 0; i < 5 && userCode === undefined; i++) {
      const c = newUserCode();
      if (await redis.set(redisKeys.deviceUserCode(userCodeHash(c)), h, 'EX', keep, 'NX') === 'OK') userCode = c;
    }
    if (userCode === undefined) throw new Error('no free user code');
    const key = redisKeys.deviceAuthorization(h);
    await redis.multi()
      .hset(key, { t: a.tenantId, c: a.clientId, s: a.scope.join(' '), uc: userCode, exp: String(Date.now() + a.ttlSeconds * 1000), iv: String(a.intervalSeconds), st: 'pending', e: '0' })
      .expire(key, keep)
      .exec();
    return { deviceCode, userCode };
  } catch (err) { throw unavailable(err); }
}

function userCodeHash(code: string): string {
  return sha256(`device-user-code:${code}`);
}

// Counts an entry of the user code against the record's budget; past it the authorization is refused.
const ENTER = `local f = redis.call('HMGET', KEYS[1], 'st', 'exp')
if not f[1] then return 'unknown' end
if tonumber(f[2]) <= tonumber(ARGV[1]) then return 'expired' end
if f[1] ~= 'pending' then return 'done' end
local e = redis.call('HINCRBY', KEYS[1], 'e', 1)
if e > tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], 'st', 'denied'); return 'burned' end
return 'ok'`;

export type Entry = { kind: 'ok' | 'expired' | 'done' | 'burned'; handle: string } | { kind: 'unknown' };

/** A typed user code (canonical form): its record's handle, counted against the code's entries. */
export async function enterUserCode(redis: Redis, userCode: string): Promise<Entry> {
  try {
    const h = await redis.get(redisKeys.deviceUserCode(userCodeHash(userCode)));
    if (!h) return { kind: 'unknown' };
    const r = await redis.eval(ENTER, 1, redisKeys.deviceAuthorization(h), String(Date.now()), String(DEVICE.entriesPerDeviceCode)) as string;
    return r === 'unknown' ? { kind: 'unknown' } : { kind: r as 'ok' | 'expired' | 'done' | 'burned', handle: h };
  } catch (err) { throw unavailable(err); }
}

/** The record behind a handle, or null. */
export async function viewDeviceAuthorization(redis: Redis, handle: string): Promise<DeviceView | null> {
  if (!HANDLE.test(handle)) return null;
  let f: Array<string | null>;
  try { f = await redis.hmget(redisKeys.deviceAuthorization(handle), 't', 'c', 's', 'uc', 'st', 'exp'); } catch (err) { throw unavailable(err); }
  const [t, c, s, uc, st, exp] = f;
  if (!t || !c || uc == null || !st || !exp) return null;
  return { tenantId: t, clientId: c, scope: (s ?? '').split(' ').filter(Boolean), userCode: uc, pending: st === 'pending', expired: Number(exp) <= Date.now() };
}

// The person's decision, taken once, while the code lives.
const DECIDE = `local f = redis.call('HMGET', KEYS[1], 'st', 'exp')
if not f[1] then return 'unknown' end
if f[1] ~= 'pending' then return 'done' end
if tonumber(f[2]) <= tonumber(ARGV[1]) then return 'expired' end
redis.call('HSET', KEYS[1], 'st', ARGV[2], 'u', ARGV[3])
return 'ok'`;

/** Approves (with the signed-in user) or denies; anything but 'ok' means the decision came too late. */
export async function decideDeviceAuthorization(redis: Redis, handle: string, decision: { approve: true; user: DeviceUser } | { approve: false }): Promise<'ok' | 'unknown' | 'done' | 'expired'> {
  try {
    return await redis.eval(DECIDE, 1, redisKeys.deviceAuthorization(handle), String(Date.now()), decision.approve ? 'approved' : 'denied', decision.approve ? JSON.stringify(decision.user) : '') as 'ok' | 'unknown' | 'done' | 'expired';
  } catch (err) { throw unavailable(err); }
}

// One poll (RFC 8628 3.4, 3.5): terminal states first, then the interval (the first poll is never too
// fast; a faster one is slow_down and adds the step for good), then pending, or approved, which is
// spent in the same step so exactly one poll gets the tokens. A poll of a used code marks it replayed
// (field 'rp', read by RECORD_ISSUED should the first poll still be issuing) and returns what the first
// poll issued (field 'iss'), so that those tokens are revoked.
const POLL = `local f = redis.call('HMGET', KEYS[1], 'c', 'exp', 'iv', 'lp', 'st', 't', 's', 'u', 'iss')
if not f[1] then return {'unknown'} end
if f[1] ~= ARGV[2] then return {'other_client'} end
local now = tonumber(ARGV[1])
if f[5] == 'used' then
  redis.call('HSET', KEYS[1], 'rp', '1')
  return {'used', f[6], f[8] or '', f[9] or ''}
end
if f[5] == 'denied' then return {'denied'} end
if tonumber(f[2]) <= now then return {'expired'} end
local iv = tonumber(f[3])
if f[4] and now - tonumber(f[4]) < iv * 1000 then
  iv = iv + tonumber(ARGV[3])
  redis.call('HSET', KEYS[1], 'iv', iv, 'lp', ARGV[1])
  return {'slow_down', tostring(iv)}
end
redis.call('HSET', KEYS[1], 'lp', ARGV[1])
if f[5] == 'approved' then
  redis.call('HSET', KEYS[1], 'st', 'used')
  return {'approved', f[6], f[7], f[8]}
end
return {'pending'}`;

/** What the poll that spent a code was issued: revoked when the code is presented again. */
export interface IssuedFromDeviceCode { accessJti: string; accessExp: number; refreshFamily?: string }

export type Poll =
  | { kind: 'approved'; tenantId: string; scope: string[]; user: DeviceUser; codeHash: string }
  | { kind: 'slow_down'; interval: number }
  // issued: null while the first poll is still issuing (it then sees the mark and revokes itself).
  | { kind: 'used'; tenantId: string; userId: string | null; issued: IssuedFromDeviceCode | null }
  | { kind: 'pending' | 'denied' | 'expired' | 'unknown' | 'other_client' };

/** One poll of a device code by a client. */
export async function pollDeviceCode(redis: Redis, deviceCode: string, clientId: string): Promise<Poll> {
  if (!DEVICE_CODE.test(deviceCode)) return { kind: 'unknown' };
  let r: string[];
  try {
    r = await redis.eval(POLL, 1, redisKeys.deviceAuthorization(sha256(deviceCode)), String(Date.now()), clientId, String(DEVICE.slowDownStepSeconds)) as string[];
  } catch (err) { throw unavailable(err); }
  const kind = r[0]!;
  if (kind === 'approved') return { kind, tenantId: r[1]!, scope: r[2]!.split(' ').filter(Boolean), user: JSON.parse(r[3]!) as DeviceUser, codeHash: sha256(deviceCode) };
  if (kind === 'slow_down') return { kind, interval: Number(r[1]) };
  if (kind === 'used') {
    return { kind, tenantId: r[1]!, userId: r[2] ? (JSON.parse(r[2]) as DeviceUser).userId : null, issued: r[3] ? (JSON.parse(r[3]) as IssuedFromDeviceCode) : null };
  }
  return { kind: kind as 'pending' | 'denied' | 'expired' | 'unknown' | 'other_client' };
}

// Remembers what the spending poll issued, on a record that still exists (never recreating an expired
// one without its TTL); answers whether a replay marked it meanwhile.
const RECORD_ISSUED = `if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'iss', ARGV[1])
if redis.call('HGET', KEYS[1], 'rp') == '1' then return 1 end
return 0`;

/**
 * Records the tokens a spent code got; true when the code was replayed meanwhile (then revoke them now).
 * A failure is not the poll's failure (as for authorization codes): the tokens are served, and only a
 * later replay cannot name them.
 */
export async function recordDeviceCodeIssued(redis: Redis, codeHash: string, issued: IssuedFromDeviceCode): Promise<boolean> {
  const r = await redis.eval(RECORD_ISSUED, 1, redisKeys.deviceAuthorization(codeHash), JSON.stringify(issued)).catch(() => 0);
  return r === 1;
}
