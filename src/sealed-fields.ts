import { loadConfig } from './config.js';
import { decrypt, deriveKey, encrypt } from './tokens/secrets.js';
import { isEmail } from './users/email.js';

/**
 * Personal data inside JSON documents the service keeps (outbox event data and the webhook deliveries
 * made from it, audit entries, log records, review tasks) — addresses, and the names and metadata of
 * people — is sealed where it is written and opened where it leaves: a webhook request, an admin API
 * answer, an archived chunk. A sealed value is the string `pii:v1:<base64url(iv|tag|ciphertext)>`
 * (`pii:j1:` for a whole JSON value; AES-256-GCM, a key derived from KEY_ENCRYPTION_KEY, bound to the
 * tenant), so documents keep their shape and no column holds them in clear.
 */
const PREFIX = 'pii:v1:';
// A whole JSON value sealed as one string (a user's metadata): keys, numbers and all. Opens to the value.
const JSON_PREFIX = 'pii:j1:';
let key: Buffer | undefined;

/** Set by each process at start from its config; a process that did not falls back to reading it. */
export function configureFieldSealing(kek: Buffer): void { key = deriveKey(kek, 'pii-fields'); }
function sealingKey(): Buffer {
  if (!key) configureFieldSealing(loadConfig().keyEncryptionKey);
  return key!;
}

const aad = (tenantId: string) => `pii-field:${tenantId}`;

export function sealValue(tenantId: string, s: string): string {
  return PREFIX + encrypt(sealingKey(), Buffer.from(s, 'utf8'), aad(tenantId)).toString('base64url');
}

export function openValue(tenantId: string, s: string): string {
  if (!s.startsWith(PREFIX)) return s;
  try { return decrypt(sealingKey(), Buffer.from(s.slice(PREFIX.length), 'base64url'), aad(tenantId)).toString('utf8'); } catch { return s; }
}

/** A JSON value sealed as one `pii:j1:` string. */
export function sealJson(tenantId: string, v: unknown): string {
  return JSON_PREFIX + encrypt(sealingKey(), Buffer.from(JSON.stringify(v), 'utf8'), aad(tenantId)).toString('base64url');
}

function openJson(tenantId: string, s: string): unknown {
  try { return JSON.parse(decrypt(sealingKey(), Buffer.from(s.slice(JSON_PREFIX.length), 'base64url'), aad(tenantId)).toString('utf8')); } catch { return s; }
}

/** Maps every string of `v` through `f`; `whole` may replace a string by any value (a sealed JSON value opened). */
function walk(v: unknown, f: (s: string) => string, depth = 0, whole?: (s: string) => unknown): unknown {
  if (typeof v === 'string') {
    const w = whole?.(v);
    return w !== undefined ? w : f(v);
  }
  // Documents are bounded by the input limits; a runaway depth is left as it is rather than recursed.
  if (v === null || typeof v !== 'object' || depth > 64) return v;
  if (Array.isArray(v)) return v.map((x) => walk(x, f, depth + 1, whole));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = walk(x, f, depth + 1, whole);
  return out;
}

// An address anywhere in a string (a display name like "Ann <ann@example.com>" carries one too).
const CONTAINS_ADDRESS = /[^\s@<>()[\]\\,;:"]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/;

const isSealed = (s: string) => s.startsWith(PREFIX) || s.startsWith(JSON_PREFIX);

/**
 * A copy of `doc` with its personal data sealed: every string that is or contains an email address, and
 * the `name` and `metadata` of every object that describes a person — one with an `email` field (a user
 * as the admin API shows it, an import's pending change). `metadata` is sealed whole (one `pii:j1:`
 * string), since any of its keys or values may be personal. Other values are untouched.
 */
export function sealFields<T>(tenantId: string, doc: T): T {
  const str = (s: string) => (s.includes('@') && !isSealed(s) && (isEmail(s) || CONTAINS_ADDRESS.test(s)) ? sealValue(tenantId, s) : s);
  const go = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return str(v);
    if (v === null || typeof v !== 'object' || depth > 64) return v;
    if (Array.isArray(v)) return v.map((x) => go(x, depth + 1));
    const person = typeof (v as { email?: unknown }).email === 'string';
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (person && k === 'name' && typeof x === 'string' && x !== '' && !isSealed(x)) out[k] = sealValue(tenantId, x);
      else if (person && k === 'metadata' && x !== null && typeof x === 'object' && Object.keys(x).length > 0) out[k] = sealJson(tenantId, x);
      else out[k] = go(x, depth + 1);
    }
    return out;
  };
  return go(doc, 0) as T;
}

/** A copy of `doc` with every sealed value opened. */
export function openFields<T>(tenantId: string, doc: T): T {
  return walk(doc, (s) => (s.startsWith(PREFIX) ? openValue(tenantId, s) : s), 0, (s) => (s.startsWith(JSON_PREFIX) ? openJson(tenantId, s) : undefined)) as T;
}
