import { AppError } from '../errors.js';

/**
 * The one email address rule of the service: the login form and the admin API accept the same
 * addresses, so an address an administrator creates can also sign in.
 */

// Pragmatic shape check (RFC 5321 lengths, one @, a dot in the domain, no spaces or angle brackets).
const EMAIL_RE = /^[^\s@<>()[\]\\,;:"]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;

export function isEmail(s: string): boolean {
  return s.length <= 254 && EMAIL_RE.test(s);
}

/** Addresses are compared case-insensitively (as the users table does). */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** 422 invalid_email, the same from the login form's JSON API and the admin API. */
export class InvalidEmail extends AppError {
  constructor() { super(422, 'invalid_email', 'The email address is not valid.', { details: { email: ['is not a valid email address'] } }); }
}
