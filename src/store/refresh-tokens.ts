import type { Db } from '../sql.js';
import { consentUpsert, type ConsentInput } from './consents.js';

export interface RefreshRecord {
  id: string; tenant_id: string; client_id: string; sub: string; scope: string; family_id: string;
  generation: number; shard: number; status: 'active' | 'rotated' | 'revoked'; access_jti: string | null;
  auth_time: number | null; claims: Record<string, unknown>; expires_at: number;
}

/** One live refresh token family of a user: what the admin API calls a session. */
export interface LiveFamily { family_id: string; client_id: string; scope: string; started_at: number; last_used_at: number; expires_at: number }

/** A refresh token row to insert; `id` is the SHA-256 of the token (the token itself is never stored). */
export interface NewRefreshRow {
  id: string; clientId: string; sub: string; scope: string; familyId: string; generation: number; shard: number;
  accessJti: string | null; authTime: number | null; claims: Record<string, unknown>; expiresAt: number;
}

/**
 * Refresh tokens of one tenant, by the hash of the token. The token format and the rotation rules are
 * in src/tokens/refresh-tokens.ts; this is their storage only.
 */
export class RefreshTokenRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  /**
   * `consent`: a first-party client's consent, recorded by the same statement (a data-modifying CTE):
   * the token and the consent it rests on are written together, in one round trip.
   */
  async insert(r: NewRefreshRow, consent?: ConsentInput): Promise<void> {
    await this.db`${consent ? this.db`with consent as (${consentUpsert(this.db, this.tenantId, consent, true)})` : this.db``}
      insert into refresh_tokens (id, tenant_id, client_id, sub, scope, family_id, generation, shard, status, access_jti, auth_time, claims, expires_at)
      values (${r.id}, ${this.tenantId}, ${r.clientId}, ${r.sub}, ${r.scope}, ${r.familyId}, ${r.generation}, ${r.shard}, 'active',
              ${r.accessJti}, ${r.authTime}, ${this.db.json(r.claims as never)}, ${r.expiresAt})`;
  }

  async get(id: string): Promise<RefreshRecord | null> {
    const [row] = await this.db<RefreshRecord[]>`select * from refresh_tokens where tenant_id = ${this.tenantId} and id = ${id}`;
    return row ?? null;
  }

  /** The row, locked until the transaction ends (call on a transaction). */
  async getForUpdate(id: string): Promise<RefreshRecord | null> {
    const [row] = await this.db<RefreshRecord[]>`select * from refresh_tokens where tenant_id = ${this.tenantId} and id = ${id} for update`;
    return row ?? null;
  }

  async markRotated(id: string, at = Date.now()): Promise<void> {
    await this.db`update refresh_tokens set status = 'rotated', used_at = ${at} where tenant_id = ${this.tenantId} and id = ${id}`;
  }

  /** Revokes a whole family; returns the access token ids issued from it. */
  async revokeFamily(familyId: string): Promise<string[]> {
    const rows = await this.db<{ access_jti: string | null }[]>`
      update refresh_tokens set status = 'revoked' where tenant_id = ${this.tenantId} and family_id = ${familyId} returning access_jti`;
    return rows.map((r) => r.access_jti).filter((j): j is string => !!j);
  }

  /**
   * A user's sessions at applications: each refresh token family with a live token (one sign-in,
   * rotated since), newest use first, at most 100.
   */
  async liveFamilies(sub: string, now = Date.now()): Promise<LiveFamily[]> {
    return this.db<LiveFamily[]>`
      select family_id, client_id, (array_agg(scope order by created_at desc))[1] as scope, min(created_at)::float8 as started_at,
        max(coalesce(used_at, created_at))::float8 as last_used_at, (max(expires_at) filter (where status = 'active'))::float8 as expires_at
      from refresh_tokens where tenant_id = ${this.tenantId} and sub = ${sub}
      group by family_id, client_id having bool_or(status = 'active' and expires_at > ${now})
      order by last_used_at desc limit 100`;
  }

  /** Whether this family is the user's (an admin revoking a session names both). */
  async familyOf(sub: string, familyId: string): Promise<string | null> {
    const [row] = await this.db<{ client_id: string }[]>`
      select client_id from refresh_tokens where tenant_id = ${this.tenantId} and sub = ${sub} and family_id = ${familyId} limit 1`;
    return row?.client_id ?? null;
  }

  /** Revokes every live refresh token of one user at one client (a withdrawn consent); returns the access token ids issued from them. */
  async revokeForGrant(sub: string, clientId: string): Promise<string[]> {
    const rows = await this.db<{ access_jti: string | null }[]>`
      update refresh_tokens set status = 'revoked'
      where tenant_id = ${this.tenantId} and sub = ${sub} and client_id = ${clientId} and status <> 'revoked' returning access_jti`;
    return rows.map((r) => r.access_jti).filter((j): j is string => !!j);
  }
}
