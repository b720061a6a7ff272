import { createHash } from 'node:crypto';
import { normalizeEmail } from '../users/email.js';

/** Redis keys of the login feature: defined with every other key in src/store/redis-keys.ts. */
export { loginKeys } from '../store/redis-keys.js';

export function sha256(s: string): string {
  return createHash('sha256').update(s).digest('base64url');
}

export function emailHash(email: string): string {
  return sha256(`email:${normalizeEmail(email)}`);
}
