import { decrypt, deriveKey, encrypt } from '../tokens/secrets.js';

/**
 * Job payloads never carry a one-time code in the clear (BullMQ keeps job data in Redis): the producer
 * seals it with a key derived from KEY_ENCRYPTION_KEY, bound to the recipient, and the worker opens it.
 */
export function mailKey(master: Buffer): Buffer {
  return deriveKey(master, 'mail-jobs');
}

export function seal(key: Buffer, secret: string, to: string): string {
  return encrypt(key, Buffer.from(secret, 'utf8'), `mail:${to}`).toString('base64url');
}

export function unseal(key: Buffer, sealed: string, to: string): string {
  return decrypt(key, Buffer.from(sealed, 'base64url'), `mail:${to}`).toString('utf8');
}
