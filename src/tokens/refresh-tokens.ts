import { randomBytes } from '../random.js';
import { declareEvents } from '../events/declare.js';
import { randomToken } from '../store/ids.js';
import type { ConsentInput } from '../store/consents.js';
import { RefreshTokenRepository, type RefreshRecord } from '../store/refresh-tokens.js';
import type { Db, Sql } from '../sql.js';
import { sha256b64url } from './secrets.js';
import type { ShardGeneration } from './sharding.js';

/** A reused refresh token is a security alert (its family is revoked). */
const refreshTokenEvents = declareEvents(['security.alert']);

export type { RefreshRecord } from '../store/refresh-tokens.js';

const FORMAT = /^rt\.g(\d{1,9})\.(\d{1,5})\.([A-Za-z0-9_-]{43})$/;

/** Opaque refresh token `rt.g<generation>.<shard>.<random>`; only its SHA-256 is stored. */
export function newRefreshToken(g: ShardGeneration): { token: string; id: string; generation: number; shard: number } {
  const shard = randomBytes(2).readUInt16BE() % g.shardCount;
  const token = `rt.g${g.generation}.${shard}.${randomToken(32)}`;
  return { token, id: sha256b64url(token), generation: g.generation, shard };
}

export function looksLikeRefreshToken(token: string): boolean {
  return FORMAT.test(token);
}

export interface NewRefresh {
  tenantId: string; clientId: string; sub: string; scope: string; familyId?: string; accessJti: string | null;
  authTime: number | null; claims?: Record<string, unknown>; ttlSeconds: number; generation: ShardGeneration;
  /** A first-party client's consent, written by the same statement (see RefreshTokenRepository.insert). */
  consent?: ConsentInput;
}

/** Issues a refresh token: stores its hash and returns the token. A new family is named after its first token. */
export async function storeRefreshToken(db: Db, r: NewRefresh): Promise<string> {
  const t = newRefreshToken(r.generation);
  await new RefreshTokenRepository(db, r.tenantId).insert({
    id: t.id, clientId: r.clientId, sub: r.sub, scope: r.scope, familyId: r.familyId ?? t.id, generation: t.generation, shard: t.shard,
    accessJti: r.accessJti, authTime: r.authTime, claims: r.claims ?? {}, expiresAt: Date.now() + r.ttlSeconds * 1000,
  }, r.consent);
  return t.token;
}

/** The record of a refresh token in the given tenant, or null. */
export async function findRefreshToken(db: Db, tenantId: string, token: string): Promise<RefreshRecord | null> {
  if (!looksLikeRefreshToken(token)) return null;
  return new RefreshTokenRepository(db, tenantId).get(sha256b64url(token));
}

export type RotateOutcome =
  | { kind: 'rotated'; record: RefreshRecord }
  | { kind: 'reused'; record: RefreshRecord; accessJtis: string[] }
  | { kind: 'invalid' }
  /** Bound to a DPoP key (cnf.jkt) the request did not prove: nothing changed. */
  | { kind: 'key_mismatch'; proved: boolean };

/**
 * Marks an active refresh token as used, atomically. A token that was already rotated is a replay:
 * its whole family is revoked and the access token ids issued from it are returned for revocation.
 * `check` may refuse the request (by throwing) after the token is found usable and before it is spent.
 */
export async function consumeRefreshToken(sql: Sql, token: string, client: { tenantId: string; clientId: string }, holderJkt?: string, check?: (row: RefreshRecord) => void): Promise<RotateOutcome> {
  if (!looksLikeRefreshToken(token)) return { kind: 'invalid' };
  const id = sha256b64url(token);
  return sql.begin(async (tx) => {
    const repo = new RefreshTokenRepository(tx, client.tenantId);
    const row = await repo.getForUpdate(id);
    if (!row || row.client_id !== client.clientId) return { kind: 'invalid' } as const;
    // A key-bound token (a public client's, RFC 9449 5) is refused before anything changes when the request
    // did not prove its key: a thief without the key can neither use it nor set off reuse detection.
    const bound = (row.claims as { cnf?: { jkt?: unknown } } | null)?.cnf?.jkt;
    if (typeof bound === 'string' && bound !== holderJkt) return { kind: 'key_mismatch', proved: holderJkt !== undefined } as const;
    if (row.status === 'rotated') {
      const accessJtis = await repo.revokeFamily(row.family_id);
      // A replayed refresh token means it leaked (RFC 9700 4.14.2): the family's revocation and the alert commit together.
      await refreshTokenEvents.emit(tx, row.tenant_id, 'security.alert', { user_id: row.sub, client_id: row.client_id, reason: 'refresh_token_reuse' });
      return { kind: 'reused', record: row, accessJtis } as const;
    }
    if (row.status !== 'active' || Number(row.expires_at) <= Date.now()) return { kind: 'invalid' } as const;
    // The request's own checks against the grant (scope, resource): a refusal leaves the token unspent.
    check?.(row);
    await repo.markRotated(id);
    return { kind: 'rotated', record: row } as const;
  }) as Promise<RotateOutcome>;
}

/** Revokes a refresh token's whole family in one tenant; returns the access token ids issued from it. */
export async function revokeFamily(db: Db, tenantId: string, familyId: string): Promise<string[]> {
  return new RefreshTokenRepository(db, tenantId).revokeFamily(familyId);
}
