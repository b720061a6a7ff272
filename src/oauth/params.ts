import { OAuthError } from '../errors.js';

export type Form = Record<string, string | string[]>;

/** A single-valued parameter; RFC 6749 3.1 forbids repeating it. */
export function one(form: Form, name: string): string | undefined {
  const v = form[name];
  if (Array.isArray(v)) throw new OAuthError('invalid_request', `The ${name} parameter must not be repeated.`);
  return v === '' ? undefined : v;
}

export function required(form: Form, name: string): string {
  const v = one(form, name);
  if (v === undefined) throw new OAuthError('invalid_request', `The ${name} parameter is required.`);
  return v;
}

/** A repeatable parameter (RFC 8693 audience and resource). */
export function many(form: Form, name: string): string[] {
  const v = form[name];
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).filter((x) => x !== '');
}

export function scopeList(scope: string | undefined): string[] {
  return scope ? [...new Set(scope.split(' ').filter(Boolean))] : [];
}

/** RFC 6749 7.2: token responses are never cached. */
export const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' } as const;
