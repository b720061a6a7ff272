import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors.js';
import type { HttpRequest } from '../http/request.js';
import { serializeCookie } from '../http/request.js';
import type { LoginContext } from './context.js';
import { CSRF_COOKIE } from './options.js';

export class CsrfError extends AppError {
  constructor() { super(403, 'forbidden', 'The form has expired or did not come from this site. Go back, reload the page and try again.'); }
}

/**
 * CSRF protection for form posts (double submit, signed): the browser holds a random value in an
 * HttpOnly SameSite cookie, and every form carries an HMAC of it that another site cannot compute.
 * JSON requests need no token: a cross-site page cannot send application/json without CORS.
 */
export function csrfFor(ctx: LoginContext, req: HttpRequest): { token: string; cookie?: string } {
  let seed = req.cookies()[CSRF_COOKIE];
  let cookie: string | undefined;
  if (!seed || seed.length !== 43) {
    seed = randomBytes(32).toString('base64url');
    cookie = serializeCookie(CSRF_COOKIE, seed, { httpOnly: true, secure: ctx.secureCookies, sameSite: 'Lax' });
  }
  return { token: createHmac('sha256', ctx.csrfKey).update(seed).digest('base64url'), cookie };
}

export function checkCsrf(ctx: LoginContext, req: HttpRequest, presented: unknown): void {
  const seed = req.cookies()[CSRF_COOKIE];
  if (!seed || typeof presented !== 'string') throw new CsrfError();
  const expected = createHmac('sha256', ctx.csrfKey).update(seed).digest();
  const got = Buffer.from(presented, 'base64url');
  if (got.length !== expected.length || !timingSafeEqual(got, expected)) throw new CsrfError();
}
