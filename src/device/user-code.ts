import { randomInt } from 'node:crypto';

/**
 * User codes (RFC 8628 6.1): base-20 without vowels (no words, no 0/O or 1/I confusion), 8 characters
 * shown as XXXX-XXXX: 20^8 ≈ 2.6·10^10 codes (34.6 bits), guessed only through the entry budgets.
 */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
export const USER_CODE_LENGTH = 8;

const VALID = new RegExp(`^[${USER_CODE_ALPHABET}]{${USER_CODE_LENGTH}}$`);

/** A fresh code in its canonical form (no dash). */
export function newUserCode(): string {
  let out = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) out += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return out;
}

/** The code as people see and type it: XXXX-XXXX. */
export function displayUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/**
 * What a person typed, in canonical form, or null when it cannot be a code: lower case is accepted and
 * dashes and spaces are ignored (RFC 8628 6.1); any other character makes it invalid rather than being
 * dropped, so a typo never turns into another valid code.
 */
export function normalizeUserCode(typed: string): string | null {
  if (typed.length > 32) return null;
  const c = typed.toUpperCase().replace(/[\s-]/g, '');
  return VALID.test(c) ? c : null;
}
