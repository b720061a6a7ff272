import { createHmac, randomInt } from 'node:crypto';
import { AppError, ServiceUnavailable } from '../errors.js';
import { MAILER_PLUGIN } from '../plugins/registry.js';
import { countHits, enforceLimits, type HitCounts } from '../store/rate-limit.js';
import type { LoginContext } from './context.js';
import { emailHash, loginKeys } from './keys.js';
import { LOGIN } from './options.js';
import { assertLoginMethod } from '../tenants/settings-cache.js';

export class InvalidCode extends AppError {
  constructor(description = 'The code is invalid or has expired.') { super(400, 'invalid_request', description, { details: { code: ['is invalid or has expired'] } }); }
}

function codeHash(key: Buffer, code: string, eh: string): Buffer {
  return createHmac('sha256', key).update(`${eh}:${code}`).digest();
}

/** The code-request windows of an address and a client IP (their limits are the tenant's, applied later). */
export function codeRequestWindows(email: string, ip: string): Array<{ key: string; windowMs: number }> {
  return [
    { key: loginKeys.rateAddress(emailHash(email)), windowMs: LOGIN.perAddressWindowSeconds * 1000 },
    { key: loginKeys.rateIp(ip || 'unknown'), windowMs: 60_000 },
  ];
}

/**
 * What a code request has already sent to Redis in the round trip of its interaction read: the hits on
 * its rate windows (codeRequestWindows, counted before the tenant is known: a request refused for any
 * reason still counts), and the tenant's suspension check, still in flight (every answer waits for it,
 * so a suspended tenant's 403 comes first as before).
 */
export interface CodeRequestReads { hits?: Promise<HitCounts>; tenantCheck?: Promise<void> }

// Replaces the address's code: hash, attempts, tenant, client, with the code's TTL.
const STORE = `redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'h', ARGV[1], 'a', '0', 't', ARGV[2], 'c', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1`;

// Deletes the code written for a refused request, unless a newer request replaced it meanwhile.
const DROP_IF_OURS = `if redis.call('HGET', KEYS[1], 'h') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/**
 * Creates a code for an address and queues its email. Only an HMAC of the code is stored, under the
 * address's hash, with a short TTL; a new code replaces the previous one. Unknown and known addresses
 * take exactly the same path (users are created on first verification), so nothing is enumerable.
 * Redis: the code is written in the same round trip as the tenant check (`reads.tenantCheck`); a refused
 * tenant's code is deleted again (it was never mailed).
 */
export async function generateCode(ctx: LoginContext, a: { email: string; tenantId: string; clientId: string; clientName: string; ip: string }, reads: CodeRequestReads = {}): Promise<{ expiresIn: number }> {
  const tenantCheck = reads.tenantCheck ?? Promise.resolve();
  const redis = ctx.deps.redis;
  const eh = emailHash(a.email);
  try {
    // A tenant that switched its mailer off cannot send codes: say so at once rather than queue mail nobody sends.
    if (!(await ctx.deps.tokens.plugins.enabled(a.tenantId, MAILER_PLUGIN))) {
      throw new ServiceUnavailable('Sign-in by email code is unavailable: the mailer is disabled for this tenant.', 300);
    }
    // The tenant may switch the method off or tighten the limits, never loosen them (src/tenants/settings-cache.ts).
    const limits = (await assertLoginMethod(ctx.deps.tokens.tenantSettings, a.tenantId, 'email_code')).email_code_rate_limits ?? {};
    const counts = await (reads.hits ?? countHits(redis, codeRequestWindows(a.email, a.ip)));
    enforceLimits(counts, [
      { limit: Math.min(LOGIN.perAddressLimit, limits.per_address ?? Infinity) },
      { limit: Math.min(ctx.deps.config.loginIpLimitPerMinute, limits.per_ip_per_minute ?? Infinity) },
    ], 'Too many codes requested; try again later.');
  } catch (err) {
    await tenantCheck;
    throw err;
  }
  const code = String(randomInt(0, 10 ** LOGIN.codeLength)).padStart(LOGIN.codeLength, '0');
  const key = loginKeys.otp(eh);
  const h = codeHash(ctx.codeKey, code, eh).toString('base64url');
  // A script, not a MULTI: ioredis sends a MULTI at once but auto-pipelines a script, so it leaves in
  // the same write as the tenant check.
  const writing = redis.eval(STORE, 1, key, h, a.tenantId, a.clientId, String(LOGIN.codeTtlSeconds));
  writing.catch(() => {});
  try {
    await tenantCheck;
  } catch (err) {
    void writing.then(() => redis.eval(DROP_IF_OURS, 1, key, h)).catch(() => {});
    throw err;
  }
  try {
    await writing;
  } catch (err) {
    throw new ServiceUnavailable('The code could not be stored; retry shortly.', 1, err);
  }
  await ctx.mail().sendLoginCode(a.tenantId, a.email.trim(), code, a.clientName, LOGIN.codeTtlSeconds);
  return { expiresIn: LOGIN.codeTtlSeconds };
}

// One round trip per check: counts the attempt, compares the presented HMAC (ARGV[1]) with the stored
// one and deletes the code when it matched or the attempt reached the bound (ARGV[2]), atomically, so a
// correct code works once. Answers {attempts, outcome, h, t, c, pttl} (outcome: ok, wrong or burned).
// The comparison is Lua's string equality, not constant-time: both sides are HMACs under the server's
// key, so how far a wrong guess's HMAC agrees with the stored one tells nothing about the code.
const ATTEMPT = `if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local a = redis.call('HINCRBY', KEYS[1], 'a', 1)
local v = redis.call('HMGET', KEYS[1], 'h', 't', 'c')
local ttl = redis.call('PTTL', KEYS[1])
local max = tonumber(ARGV[2])
local outcome = 'wrong'
if a > max then outcome = 'burned'
elseif v[1] == ARGV[1] then outcome = 'ok'
elseif a >= max then outcome = 'burned' end
if outcome ~= 'wrong' then redis.call('DEL', KEYS[1]) end
return {a, outcome, v[1], v[2], v[3], ttl}`;

// Puts a used code back unless the address has a code again (a newer one is never overwritten).
const RESTORE = `if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'h', ARGV[1], 'a', ARGV[2], 't', ARGV[3], 'c', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`;

export type VerifyOutcome =
  | {
    ok: true; tenantId: string; clientId: string;
    /**
     * Makes the code usable again (same attempts count, the rest of its lifetime): for a sign-in that
     * could not be completed because a dependency was down, so the 503's "retry" can succeed.
     */
    restore(): Promise<void>;
  }
  | { ok: false; reason: 'invalid_code' | 'too_many_attempts' | 'no_code'; tenantId?: string; clientId?: string };

/**
 * Checks a code in one Redis round trip (ATTEMPT). Each try counts; the try that reaches the bound burns
 * the code, and a correct code is deleted on use in the same script, so it works once (of two racing
 * correct tries the second finds no code).
 */
export async function verifyCode(ctx: LoginContext, email: string, code: string): Promise<VerifyOutcome> {
  const eh = emailHash(email);
  const key = loginKeys.otp(eh);
  const redis = ctx.deps.redis;
  const presented = codeHash(ctx.codeKey, /^\d+$/.test(code) ? code : 'x', eh).toString('base64url');
  let r: [number, 'ok' | 'wrong' | 'burned', string, string, string, number] | null;
  try {
    r = (await redis.eval(ATTEMPT, 1, key, presented, String(LOGIN.codeMaxAttempts))) as typeof r;
  } catch (err) {
    throw new ServiceUnavailable('The code cannot be checked right now; retry shortly.', 1, err);
  }
  if (!r) return { ok: false, reason: 'no_code' };
  const [attempts, outcome, stored, tenantId, clientId, ttlMs] = r;
  if (outcome === 'burned') return { ok: false, reason: 'too_many_attempts', tenantId, clientId };
  if (outcome === 'wrong') return { ok: false, reason: 'invalid_code', tenantId, clientId };
  const restore = async () => {
    if (ttlMs > 0) await redis.eval(RESTORE, 1, key, stored, String(attempts), tenantId, clientId, String(ttlMs));
  };
  return { ok: true, tenantId, clientId, restore };
}
