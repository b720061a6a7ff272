import { createHash } from 'node:crypto';

/**
 * Redis keys of the login feature (the client's keyPrefix adds config.redisPrefix). Secrets never
 * appear in key names: codes, session ids and addresses are hashed first.
 */
export const loginKeys = {
  otp: (emailHash: string) => `otp:${emailHash}`,
  rateAddress: (emailHash: string) => `rl:otp:addr:${emailHash}`,
  rateIp: (ip: string) => `rl:otp:ip:${ip}`,
  interaction: (id: string) => `ia:${id}`,
  session: (sidHash: string) => `sess:${sidHash}`,
  authCode: (codeHash: string) => `ac:${codeHash}`,
  authCodeUsed: (codeHash: string) => `ac:${codeHash}:used`,
  authCodeIssued: (codeHash: string) => `ac:${codeHash}:issued`,
  authCodeReplayed: (codeHash: string) => `ac:${codeHash}:replayed`,
  consent: (tenant: string, userId: string, clientId: string) => `consent:${tenant}:${userId}:${clientId}`,
};

export function sha256(s: string): string {
  return createHash('sha256').update(s).digest('base64url');
}

/** Addresses are compared case-insensitively (as the users table does). */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function emailHash(email: string): string {
  return sha256(`email:${normalizeEmail(email)}`);
}

// Pragmatic shape check (RFC 5321 lengths, one @, a dot in the domain, no spaces or angle brackets).
const EMAIL_RE = /^[^\s@<>()[\]\\,;:"]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;

export function isEmail(s: string): boolean {
  return s.length <= 254 && EMAIL_RE.test(s);
}
