/** Normalizations of the `normalize` transform: lower-cased email addresses and E.164 phone numbers. */

// The practical subset of RFC 5321 addresses an account system accepts (as the admin API does).
const EMAIL = /^[^\s@"(),:;<>[\\\]]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;
const E164 = /^\+[1-9]\d{6,14}$/;

export function isEmail(s: string): boolean { return s.length <= 254 && EMAIL.test(s); }
export function isE164(s: string): boolean { return E164.test(s); }

/** Trimmed and lower-cased, or null when it is not an address. */
export function normalizeEmail(s: string): string | null {
  const v = s.trim().toLowerCase();
  return isEmail(v) ? v : null;
}

/**
 * E.164 (ITU-T E.164: `+`, country code, at most 15 digits). Separators are dropped, a leading `00`
 * is the international prefix, and a national number takes `defaultCountryCode` (its leading trunk 0
 * dropped). Null when no valid number results.
 */
export function normalizePhone(s: string, defaultCountryCode?: string): string | null {
  let v = s.trim().replace(/[\s().\-/]/g, '');
  if (v.startsWith('00')) v = `+${v.slice(2)}`;
  if (!v.startsWith('+')) {
    const cc = defaultCountryCode?.replace(/^\+/, '');
    if (!cc || !/^[1-9]\d{0,2}$/.test(cc)) return null;
    v = `+${cc}${v.replace(/^0/, '')}`;
  }
  return isE164(v) ? v : null;
}
