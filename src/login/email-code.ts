import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import { AppError, ServiceUnavailable } from '../errors.js';
import { MAILER_PLUGIN } from '../plugins/registry.js';
import { hitLimits } from '../store/rate-limit.js';
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

/**
 * Creates a code for an address and queues its email. Only an HMAC of the code is stored, under the
 * address's hash, with a short TTL; a new code replaces the previous one. Unknown and known addresses
 * take exactly the same path (users are created on first verification), so nothing is enumerable.
 */
export async function generateCode(ctx: LoginContext, a: { email: string; tenantId: string; clientId: string; clientName: string; ip: string }): Promise<{ expiresIn: number }> {
  // A tenant that switched its mailer off cannot send codes: say so at once rather than queue mail nobody sends.
  if (!(await ctx.deps.tokens.plugins.enabled(a.tenantId, MAILER_PLUGIN))) {
    throw new ServiceUnavailable('Sign-in by email code is unavailable: the mailer is disabled for this tenant.', 300);
  }
  const eh = emailHash(a.email);
  // The tenant may switch the method off or tighten the limits, never loosen them (src/tenants/settings-cache.ts).
  const limits = (await assertLoginMethod(ctx.deps.tokens.tenantSettings, a.tenantId, 'email_code')).email_code_rate_limits ?? {};
  await hitLimits(ctx.deps.redis, [
    { key: loginKeys.rateAddress(eh), limit: Math.min(LOGIN.perAddressLimit, limits.per_address ?? Infinity), windowMs: LOGIN.perAddressWindowSeconds * 1000 },
    { key: loginKeys.rateIp(a.ip || 'unknown'), limit: Math.min(ctx.deps.config.loginIpLimitPerMinute, limits.per_ip_per_minute ?? Infinity), windowMs: 60_000 },
  ], 'Too many codes requested; try again later.');
  const code = String(randomInt(0, 10 ** LOGIN.codeLength)).padStart(LOGIN.codeLength, '0');
  const key = loginKeys.otp(eh);
  try {
    await ctx.deps.redis.multi()
      .del(key)
      .hset(key, { h: codeHash(ctx.codeKey, code, eh).toString('base64url'), a: '0', t: a.tenantId, c: a.clientId })
      .expire(key, LOGIN.codeTtlSeconds)
      .exec();
  } catch (err) {
    throw new ServiceUnavailable('The code could not be stored; retry shortly.', 1, err);
  }
  await ctx.mail().sendLoginCode(a.tenantId, a.email.trim(), code, a.clientName, LOGIN.codeTtlSeconds);
  return { expiresIn: LOGIN.codeTtlSeconds };
}

// Counts the attempt and returns what is needed to check it (and to put it back), atomically.
const ATTEMPT = `if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local a = redis.call('HINCRBY', KEYS[1], 'a', 1)
local v = redis.call('HMGET', KEYS[1], 'h', 't', 'c')
return {a, v[1], v[2], v[3], redis.call('PTTL', KEYS[1])}`;

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
 * Checks a code in constant time. Each try counts; the try that reaches the bound burns the code, and
 * a correct code is deleted on use, so it works once (DEL decides between two racing correct tries).
 */
export async function verifyCode(ctx: LoginContext, email: string, code: string): Promise<VerifyOutcome> {
  const eh = emailHash(email);
  const key = loginKeys.otp(eh);
  const redis = ctx.deps.redis;
  let r: [number, string, string, string, number] | null;
  try {
    r = (await redis.eval(ATTEMPT, 1, key)) as [number, string, string, string, number] | null;
  } catch (err) {
    throw new ServiceUnavailable('The code cannot be checked right now; retry shortly.', 1, err);
  }
  if (!r) return { ok: false, reason: 'no_code' };
  const [attempts, stored, tenantId, clientId, ttlMs] = r;
  if (attempts > LOGIN.codeMaxAttempts) { await redis.del(key).catch(() => {}); return { ok: false, reason: 'too_many_attempts', tenantId, clientId }; }
  const presented = codeHash(ctx.codeKey, /^\d+$/.test(code) ? code : 'x', eh);
  const expected = Buffer.from(stored, 'base64url');
  const match = expected.length === presented.length && timingSafeEqual(expected, presented);
  if (match) {
    const won = await redis.del(key).catch((err) => { throw new ServiceUnavailable('The code cannot be checked right now; retry shortly.', 1, err); });
    if (won !== 1) return { ok: false, reason: 'invalid_code', tenantId, clientId };
    const restore = async () => {
      if (ttlMs > 0) await redis.eval(RESTORE, 1, key, stored, String(attempts), tenantId, clientId, String(ttlMs));
    };
    return { ok: true, tenantId, clientId, restore };
  }
  if (attempts >= LOGIN.codeMaxAttempts) {
    await redis.del(key).catch(() => {});
    return { ok: false, reason: 'too_many_attempts', tenantId, clientId };
  }
  return { ok: false, reason: 'invalid_code', tenantId, clientId };
}
