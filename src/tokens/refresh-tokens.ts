import { randomBytes } from 'node:crypto';
import { recordEvent } from '../events/outbox.js';
import type { Sql } from '../store/sql.js';
import { sha256b64url } from './secrets.js';
import type { ShardGeneration } from './sharding.js';

export interface RefreshRecord {
  id: string; tenant_id: string; client_id: string; sub: string; scope: string; family_id: string;
  generation: number; shard: number; status: 'active' | 'rotated' | 'revoked'; access_jti: string | null;
  auth_time: number | null; claims: Record<string, unknown>; expires_at: number;
}

const FORMAT = /^rt\.g(\d{1,9})\.(\d{1,5})\.([A-Za-z0-9_-]{43})$/;

/** Opaque refresh token `rt.g<generation>.<shard>.<random>`; only its SHA-256 is stored. */
export function newRefreshToken(g: ShardGeneration): { token: string; id: string; generation: number; shard: number } {
  const shard = randomBytes(2).readUInt16BE() % g.shardCount;
  const token = `rt.g${g.generation}.${shard}.${randomBytes(32).toString('base64url')}`;
  return { token, id: sha256b64url(token), generation: g.generation, shard };
}

export function looksLikeRefreshToken(token: string): boolean {
  return FORMAT.test(token);
}

export interface NewRefresh {
  tenantId: string; clientId: string; sub: string; scope: string; familyId?: string; accessJti: string | null;
  authTime: number | null; claims?: Record<string, unknown>; ttlSeconds: number; generation: ShardGeneration;
}

export async function storeRefreshToken(sql: Sql, r: NewRefresh): Promise<string> {
  const t = newRefreshToken(r.generation);
  await sql`insert into refresh_tokens (id, tenant_id, client_id, sub, scope, family_id, generation, shard, status, access_jti, auth_time, claims, expires_at)
            values (${t.id}, ${r.tenantId}, ${r.clientId}, ${r.sub}, ${r.scope}, ${r.familyId ?? t.id}, ${t.generation}, ${t.shard}, 'active',
                    ${r.accessJti}, ${r.authTime}, ${sql.json((r.claims ?? {}) as never)}, ${Date.now() + r.ttlSeconds * 1000})`;
  return t.token;
}

export async function findRefreshToken(sql: Sql, token: string): Promise<RefreshRecord | null> {
  if (!looksLikeRefreshToken(token)) return null;
  const [row] = await sql<RefreshRecord[]>`select * from refresh_tokens where id = ${sha256b64url(token)}`;
  return row ?? null;
}

export type RotateOutcome =
  | { kind: 'rotated'; record: RefreshRecord }
  | { kind: 'reused'; record: RefreshRecord; accessJtis: string[] }
  | { kind: 'invalid' };

/**
 * Marks an active refresh token as used, atomically. A token that was already rotated is a replay:
 * its whole family is revoked and the access token ids issued from it are returned for revocation.
 */
export async function consumeRefreshToken(sql: Sql, token: string, clientId: string): Promise<RotateOutcome> {
  if (!looksLikeRefreshToken(token)) return { kind: 'invalid' };
  const id = sha256b64url(token);
  return sql.begin(async (tx) => {
    const [row] = await tx<RefreshRecord[]>`select * from refresh_tokens where id = ${id} for update`;
    if (!row || row.client_id !== clientId) return { kind: 'invalid' } as const;
    if (row.status === 'rotated') {
      const fam = await tx<{ access_jti: string | null }[]>`update refresh_tokens set status = 'revoked' where family_id = ${row.family_id} returning access_jti`;
      // A replayed refresh token means it leaked (RFC 9700 4.14.2): the family's revocation and the alert commit together.
      await recordEvent(tx, { tenantId: row.tenant_id, event: 'security.alert', data: { user_id: row.sub, client_id: row.client_id, reason: 'refresh_token_reuse' } });
      return { kind: 'reused', record: row, accessJtis: fam.map((f) => f.access_jti).filter((j): j is string => !!j) } as const;
    }
    if (row.status !== 'active' || Number(row.expires_at) <= Date.now()) return { kind: 'invalid' } as const;
    await tx`update refresh_tokens set status = 'rotated', used_at = ${Date.now()} where id = ${id}`;
    return { kind: 'rotated', record: row } as const;
  }) as Promise<RotateOutcome>;
}

/** Revokes a refresh token's whole family; returns the access token ids issued from it. */
export async function revokeFamily(sql: Sql, tenantId: string, familyId: string): Promise<string[]> {
  const rows = await sql<{ access_jti: string | null }[]>`update refresh_tokens set status = 'revoked' where tenant_id = ${tenantId} and family_id = ${familyId} returning access_jti`;
  return rows.map((r) => r.access_jti).filter((j): j is string => !!j);
}
