import { loadConfig } from '../config.js';
import { decrypt, deriveKey, encrypt } from '../tokens/secrets.js';
import { isEmail } from '../users/email.js';

/**
 * Addresses inside JSON documents the service keeps (outbox event data and the webhook deliveries made
 * from it, audit entries, log records) are sealed where they are written and opened where they leave:
 * a webhook request, an admin API answer, an archived chunk. A sealed value is the string
 * `pii:v1:<base64url(iv|tag|ciphertext)>` (AES-256-GCM, a key derived from KEY_ENCRYPTION_KEY, bound to
 * the tenant), so documents keep their shape and no column holds an address in clear.
 */
const PREFIX = 'pii:v1:';
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

function walk(v: unknown, f: (s: string) => string, depth = 0): unknown {
  if (typeof v === 'string') return f(v);
  // Documents are bounded by the input limits; a runaway depth is left as it is rather than recursed.
  if (v === null || typeof v !== 'object' || depth > 64) return v;
  if (Array.isArray(v)) return v.map((x) => walk(x, f, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = walk(x, f, depth + 1);
  return out;
}

// An address anywhere in a string (a display name like "Ann <ann@example.com>" carries one too).
const CONTAINS_ADDRESS = /[^\s@<>()[\]\\,;:"]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/;

/** A copy of `doc` with every string that is or contains an email address sealed (other values untouched). */
export function sealFields<T>(tenantId: string, doc: T): T {
  return walk(doc, (s) => (s.includes('@') && !s.startsWith(PREFIX) && (isEmail(s) || CONTAINS_ADDRESS.test(s)) ? sealValue(tenantId, s) : s)) as T;
}

/** A copy of `doc` with every sealed value opened. */
export function openFields<T>(tenantId: string, doc: T): T {
  return walk(doc, (s) => (s.startsWith(PREFIX) ? openValue(tenantId, s) : s)) as T;
}
