import { newId } from './ids.js';
import type { Db } from '../sql.js';

export interface ConsentRow {
  id: string; tenant_id: string; user_id: string; client_id: string; scopes: string[]; selected_scopes: string[] | null;
  granted_at: number; expires_at: number | null; privacy_policy_version: string | null; tos_version: string | null; consent_version: number | null;
  client_name?: string | null;
}

export interface ConsentInput {
  userId: string; clientId: string; scopes: string[];
  /** Epoch ms when the consent lapses (tenant setting consent_ttl), or null for never. */
  expiresAt?: number | null;
  policy: { privacyPolicyVersion: string; tosVersion: string; consentVersion: number };
}

/** End users' consents to clients, in one tenant. */
export class ConsentRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  /**
   * Records (or widens) a user's consent to a client; returns the scopes now consented. `scopes` keeps the
   * union of everything ever consented, `selected_scopes` what the user approved at this grant. An expired
   * consent is replaced, not widened.
   */
  async upsert(c: ConsentInput): Promise<string[]> {
    const [row] = await consentUpsert<{ scopes: string[] }[]>(this.db, this.tenantId, c);
    return row!.scopes;
  }

  /** The scopes a user consented to for a client and when that lapses, or null when none (or expired). */
  async find(userId: string, clientId: string): Promise<{ scopes: string[]; expiresAt: number | null } | null> {
    const [row] = await this.db<{ scopes: string[]; expires_at: number | null }[]>`
      select scopes, expires_at from consents where tenant_id = ${this.tenantId} and user_id = ${userId} and client_id = ${clientId}`;
    if (!row || (row.expires_at !== null && Number(row.expires_at) <= Date.now())) return null;
    return { scopes: row.scopes, expiresAt: row.expires_at === null ? null : Number(row.expires_at) };
  }

  /** A user's consents, newest first, with the client's name (the client of this tenant only). */
  async listForUser(userId: string): Promise<ConsentRow[]> {
    return this.db<ConsentRow[]>`
      select c.*, cl.name as client_name from consents c
      left join clients cl on cl.tenant_id = c.tenant_id and cl.client_id = c.client_id
      where c.tenant_id = ${this.tenantId} and c.user_id = ${userId} order by c.granted_at desc`;
  }

  /** Deletes one of the user's consents; returns its client, or null when the user has no such consent. */
  async deleteForUser(userId: string, id: string): Promise<{ clientId: string } | null> {
    const [row] = await this.db<{ client_id: string }[]>`
      delete from consents where tenant_id = ${this.tenantId} and user_id = ${userId} and id = ${id} returning client_id`;
    return row ? { clientId: row.client_id } : null;
  }
}

/**
 * ConsentRepository.upsert's statement, for a caller that runs it inside another statement (a data-
 * modifying CTE: the token endpoint records a first-party client's consent with the refresh token, one
 * statement). `unlessSame`: a row that would not change (same scopes, selection, policy versions, no
 * lapse) is left alone, so a returning user's login writes nothing to consents.
 */
export function consentUpsert<T extends readonly object[] = []>(db: Db, tenantId: string, c: ConsentInput, unlessSame = false) {
  return db<T>`
      insert into consents (id, tenant_id, user_id, client_id, scopes, selected_scopes, expires_at, privacy_policy_version, tos_version, consent_version)
      values (${newId('cns')}, ${tenantId}, ${c.userId}, ${c.clientId}, ${c.scopes}, ${c.scopes}, ${c.expiresAt ?? null},
              ${c.policy.privacyPolicyVersion}, ${c.policy.tosVersion}, ${c.policy.consentVersion})
      on conflict (tenant_id, user_id, client_id) do update set
        scopes = case when consents.expires_at is not null and consents.expires_at <= now_ms() then excluded.scopes
                 else (select array_agg(distinct s order by s) from unnest(consents.scopes || excluded.scopes) s) end,
        selected_scopes = excluded.selected_scopes,
        expires_at = excluded.expires_at,
        granted_at = case when excluded.scopes <@ consents.scopes and (consents.expires_at is null or consents.expires_at > now_ms()) then consents.granted_at else now_ms() end,
        privacy_policy_version = excluded.privacy_policy_version, tos_version = excluded.tos_version, consent_version = excluded.consent_version
      ${unlessSame ? db`where not (consents.expires_at is null and excluded.expires_at is null and excluded.scopes <@ consents.scopes
        and consents.selected_scopes is not distinct from excluded.selected_scopes
        and consents.privacy_policy_version is not distinct from excluded.privacy_policy_version
        and consents.tos_version is not distinct from excluded.tos_version and consents.consent_version is not distinct from excluded.consent_version)` : db``}
      returning scopes`;
}
