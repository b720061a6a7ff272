import { createHash } from 'node:crypto';

/** Redis keys of the login feature: defined with every other key in src/store/redis-keys.ts. */
export { loginKeys } from '../store/redis-keys.js';

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
