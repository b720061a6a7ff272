import { randomBytes } from 'node:crypto';
import type { SchemaTypes } from '../generated/types.js';
import type { CheckKeyRow, CheckOperation, CheckTier } from '../store/check-api-keys.js';
import { findCheckKeyByHash } from '../cross-tenant/credentials.js';
import type { Db } from '../sql.js';
import { deriveKey, hashSecret } from '../tokens/secrets.js';

export type Operation = CheckOperation;
export type Tier = CheckTier;

const KEY_MARK = 'svc_ck_';

/** The HMAC key check API keys are stored under (derived from KEY_ENCRYPTION_KEY). */
export function checkKeyHashKey(kek: Buffer): Buffer {
  return deriveKey(kek, 'check-api-keys');
}

/** A new key: `svc_ck_` and 256 random bits; `key_prefix` (its first 14 characters) lets people recognise it. */
export function newCheckKey(): { key: string; prefix: string } {
  const key = KEY_MARK + randomBytes(32).toString('base64url');
  return { key, prefix: key.slice(0, 14) };
}

export function looksLikeCheckKey(s: string): boolean {
  return s.startsWith(KEY_MARK) && s.length === KEY_MARK.length + 43;
}

/** The stored key a caller presented, if the string is one of ours and its keyed hash is known. */
export function findPresentedKey(db: Db, hashKey: Buffer, presented: string): Promise<CheckKeyRow | null> {
  if (!looksLikeCheckKey(presented)) return Promise.resolve(null);
  return findCheckKeyByHash(db, hashSecret(hashKey, presented));
}

/** The spec's list record; the plaintext and its hash never leave the server. */
export function checkKeyView(k: CheckKeyRow): SchemaTypes['admin.check-api-key'] {
  return {
    id: k.id, tenant_id: k.tenant_id, client_id: k.client_id, name: k.name, key_prefix: k.key_prefix, allowed_operations: k.allowed_operations,
    rate_limit_tier: k.rate_limit_tier, is_active: k.is_active && (k.expires_at === null || Number(k.expires_at) > Date.now()),
    expires_at: k.expires_at === null ? null : Number(k.expires_at), created_by: k.created_by, created_at: Number(k.created_at), updated_at: Number(k.updated_at),
  };
}
