import { randomBytes } from '../random.js';

/** A server-assigned id: a short type prefix and 96 random bits, e.g. `role_3f9c...`. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

/** An unguessable bearer value (session ids, codes, secrets): `bytes` random bytes, base64url. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
