import { createHash, createHmac } from 'node:crypto';
import { deriveKey } from '../tokens/secrets.js';
import { normalizeEmail } from '../users/email.js';
import type { LookupKey, LookupKeyring } from './keyring.js';

/**
 * The blind index of an email address: HMAC-SHA-256 under a lookup key of the normalized address.
 * Users are found by it (`user_email_index`), so no column holds an address in clear.
 */
export function blindIndex(key: Buffer, email: string): Buffer {
  return createHmac('sha256', key).update(normalizeEmail(email)).digest();
}

/** sha256 hex of key material: the only form in which a lookup key is shown or stored in clear. */
export function keyFingerprint(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex');
}

/**
 * Generation 1, the key every environment starts with: slot A, from LOOKUP_HMAC_KEY_A (64 hex) when set,
 * else derived from KEY_ENCRYPTION_KEY (so a newcomer needs no extra secret). Later generations come
 * from a rotation (src/pii/rotation/).
 */
export function initialLookupKey(kek: Buffer, env: NodeJS.ProcessEnv = process.env): LookupKey {
  const hex = env.LOOKUP_HMAC_KEY_A;
  const key = hex && /^[0-9a-fA-F]{64}$/.test(hex) ? Buffer.from(hex, 'hex') : deriveKey(kek, 'lookup-hmac:1');
  return { generation: 1, keyId: 'lookup-1', slot: 'A', fingerprint: keyFingerprint(key), key };
}

/** A keyring outside any rotation: one key for writes and reads. */
export function staticKeyring(key: LookupKey): LookupKeyring {
  const keys = [key] as const;
  return { writeKeys: () => keys, readKeys: () => keys };
}
