import { randomBytes } from 'node:crypto';
import type { Sql, TxSql } from '../store/sql.js';
import { deriveKey, hashSecret } from '../tokens/secrets.js';

type Db = Sql | TxSql;

export type Operation = 'check' | 'batch' | 'subscribe';
export type Tier = 'strict' | 'moderate' | 'lenient';

export interface CheckKeyRow {
  tenant_id: string; id: string; client_id: string; name: string; key_prefix: string; allowed_operations: Operation[]; rate_limit_tier: Tier;
  is_active: boolean; expires_at: number | null; created_by: string | null; revoked_at: number | null; created_at: number; updated_at: number;
}

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

export interface NewCheckKey { id: string; clientId: string; name: string; prefix: string; hash: Buffer; operations: Operation[]; tier: Tier; expiresAt: number | null; createdBy: string }

export async function insertCheckKey(sql: Db, tenantId: string, k: NewCheckKey): Promise<CheckKeyRow> {
  const [row] = await sql<CheckKeyRow[]>`insert into check_api_keys (tenant_id, id, client_id, name, key_prefix, key_hash, allowed_operations, rate_limit_tier, expires_at, created_by)
    values (${tenantId}, ${k.id}, ${k.clientId}, ${k.name}, ${k.prefix}, ${k.hash}, ${k.operations}, ${k.tier}, ${k.expiresAt}, ${k.createdBy})
    returning *`;
  return row!;
}

export async function getCheckKey(sql: Db, tenantId: string, id: string, lock = false): Promise<CheckKeyRow | null> {
  const [row] = await sql<CheckKeyRow[]>`select * from check_api_keys where tenant_id = ${tenantId} and id = ${id} ${lock ? sql`for update` : sql``}`;
  return row ?? null;
}

export async function listCheckKeys(sql: Db, tenantId: string, f: { page: number; limit: number; client_id?: string | undefined; is_active?: boolean | undefined }): Promise<{ rows: CheckKeyRow[]; total: number }> {
  const where = sql`tenant_id = ${tenantId} ${f.client_id ? sql`and client_id = ${f.client_id}` : sql``}
    ${f.is_active !== undefined ? sql`and is_active = ${f.is_active}` : sql``}`;
  const [rows, [count]] = await Promise.all([
    sql<CheckKeyRow[]>`select * from check_api_keys where ${where} order by created_at desc, id desc limit ${f.limit} offset ${(f.page - 1) * f.limit}`,
    sql<{ n: number }[]>`select count(*)::int as n from check_api_keys where ${where}`,
  ]);
  return { rows, total: count!.n };
}

export async function revokeCheckKey(sql: Db, tenantId: string, id: string): Promise<CheckKeyRow> {
  const [row] = await sql<CheckKeyRow[]>`update check_api_keys set is_active = false, revoked_at = now_ms(), updated_at = now_ms()
    where tenant_id = ${tenantId} and id = ${id} returning *`;
  return row!;
}

/**
 * Finds the key a caller presented, by its keyed hash. This is the one lookup without a tenant: the key
 * itself names its tenant, as a client id does at /token.
 */
export async function findCheckKey(sql: Db, hashKey: Buffer, presented: string): Promise<CheckKeyRow | null> {
  if (!looksLikeCheckKey(presented)) return null;
  const [row] = await sql<CheckKeyRow[]>`select * from check_api_keys where key_hash = ${hashSecret(hashKey, presented)}`;
  return row ?? null;
}

/** The spec's list record; the plaintext and its hash never leave the server. */
export function checkKeyView(k: CheckKeyRow): Record<string, unknown> {
  return {
    id: k.id, tenant_id: k.tenant_id, client_id: k.client_id, name: k.name, key_prefix: k.key_prefix, allowed_operations: k.allowed_operations,
    rate_limit_tier: k.rate_limit_tier, is_active: k.is_active && (k.expires_at === null || Number(k.expires_at) > Date.now()),
    expires_at: k.expires_at === null ? null : Number(k.expires_at), created_by: k.created_by, created_at: Number(k.created_at), updated_at: Number(k.updated_at),
  };
}
