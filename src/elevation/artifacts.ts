import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AppError, NotFound } from '../errors.js';
import type { ApprovalArtifactRow, ApprovalRequestRow } from '../store/approvals.js';
import { redisKeys } from '../store/redis-keys.js';

/** Artifacts live at most ten minutes (and never past their step). */
export const ARTIFACT_MAX_SECONDS = 600;
const MAX_ATTEMPTS = 5;

/** Methods whose completion needs proof the server recorded itself, and what they accept. */
export const STEP_UP: Readonly<Record<string, string[]>> = { email_otp: ['email_otp'], passkey: ['passkey'], reauth: ['reauth'] };
/** How recent a sign-in must be to count as re-authentication (reauth). */
export const REAUTH_MAX_AGE_SECONDS = 300;

export class InvalidStepUp extends AppError {
  constructor(description = 'The step-up code is invalid or has expired.') { super(400, 'invalid_request', description, { details: { code: ['is invalid or has expired'] } }); }
}

/**
 * Whether a step of `method` may be approved with `proof`, the step-up the caller's approval carried
 * (verified by the artifact route; null for a plain approve). Only `portal_confirm` asks for none;
 * any other method, known or not, asks for its own proof (fail closed).
 */
export function proves(method: string, proof: string | null): boolean {
  if (method === 'portal_confirm') return true;
  return proof !== null && (STEP_UP[method]?.includes(proof) ?? false);
}

/** A plain approve of a step whose method needs proof: the answer names the route that takes the proof. */
export class StepUpRequired extends AppError {
  constructor(method: string, requestId: string, stepId: string) {
    super(403, 'forbidden', `This step's method is ${method}: approve it through an approval artifact, which takes that proof `
      + `(POST /api/admin/approvals/${requestId}/steps/${stepId}/artifacts, then POST /api/approval-artifacts/{artifactId}/complete).`,
    { details: { method: [`${method} is proven only through an approval artifact; a plain approve satisfies portal_confirm alone`] } });
  }
}

export const artifactGone = () => new NotFound('not_found', 'No such approval artifact, or it has been used or has expired.');

/** True when `approverId` may complete the artifact: its bound approver, or any approver but the requester when unbound. */
export function mayComplete(a: ApprovalArtifactRow, r: ApprovalRequestRow, approverId: string): boolean {
  if (approverId === r.requester_id) return false;
  return a.approver_id === null || a.approver_id === approverId;
}

export function completionRequirements(method: string): { mode: 'step_up' | 'confirm'; acceptable_methods: string[] } {
  const m = STEP_UP[method];
  return m ? { mode: 'step_up', acceptable_methods: m } : { mode: 'confirm', acceptable_methods: [method] };
}

const hash = (key: Buffer, code: string) => createHmac('sha256', key).update(code).digest('base64url');

/**
 * Creates the artifact's step-up code for this approver: only its HMAC is kept, in Redis, bound to the
 * artifact and the approver, for at most the artifact's remaining life; a new code replaces the old.
 */
export async function issueStepUpCode(redis: Redis, key: Buffer, tenant: string, a: ApprovalArtifactRow, approverId: string, now: number): Promise<{ code: string; ttl: number }> {
  const ttl = Math.max(1, Math.min(ARTIFACT_MAX_SECONDS, Math.floor((Number(a.expires_at) - now) / 1000)));
  const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
  const k = redisKeys.approvalCode(tenant, a.id, approverId);
  await redis.multi().del(k).hset(k, 'h', hash(key, code), 'n', '0').expire(k, ttl).exec();
  return { code, ttl };
}

/**
 * Checks a code against the one the server recorded for this artifact and approver. A right code is
 * consumed (DEL decides a race); a wrong one counts, and the fifth burns the code.
 */
export async function verifyStepUpCode(redis: Redis, key: Buffer, tenant: string, artifactId: string, approverId: string, code: string | undefined): Promise<void> {
  if (code === undefined) throw new InvalidStepUp('This artifact needs the code sent to the approver (POST .../email-code first).');
  const k = redisKeys.approvalCode(tenant, artifactId, approverId);
  const stored = await redis.hget(k, 'h');
  if (stored === null) throw new InvalidStepUp();
  const want = Buffer.from(stored);
  const got = Buffer.from(hash(key, code));
  if (want.length !== got.length || !timingSafeEqual(want, got)) {
    if ((await redis.hincrby(k, 'n', 1)) >= MAX_ATTEMPTS) await redis.del(k);
    throw new InvalidStepUp();
  }
  if ((await redis.del(k)) !== 1) throw new InvalidStepUp();
}
