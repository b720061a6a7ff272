import type { Cursor } from './cursor.js';
import type { Db } from '../sql.js';

/** A tenant's dynamic registration policy as stored (src/registration/policy.ts gives the defaults). */
export interface RegistrationPolicyRow {
  tenant_id: string; open_registration: boolean; require_software_statement: boolean; allowed_grant_types: string[];
  allowed_scopes: string[]; allowed_audiences: string[]; allowed_auth_methods: string[]; max_clients: number;
  rate_limit_per_minute: number; updated_at: number | null;
}
export type PolicyFields = Omit<RegistrationPolicyRow, 'tenant_id' | 'updated_at'>;

/** An initial access token (RFC 7591 3); only its keyed hash is stored. */
export interface InitialAccessTokenRow {
  id: string; tenant_id: string; token_hash: Buffer; description: string | null; expires_at: number | null; max_uses: number | null;
  uses: number; revoked_at: number | null; created_by: string | null; created_at: number;
}

export interface SoftwareStatementIssuerRow {
  id: string; tenant_id: string; issuer: string; jwks: { keys: Array<Record<string, unknown>> }; description: string | null; created_at: number;
}

/** The RFC 7592 side of a dynamically registered client: its registration access token's keyed hash and echoed metadata. */
export interface ClientRegistrationRow {
  client_id: string; tenant_id: string; token_hash: Buffer; metadata: Record<string, unknown>; initial_access_token_id: string | null;
  software_statement_issuer: string | null; created_at: number; updated_at: number;
}

/** Dynamic client registration of one tenant: its policy, initial access tokens, trusted issuers and registrations. */
export class RegistrationRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  async policy(): Promise<RegistrationPolicyRow | null> {
    const [row] = await this.db<RegistrationPolicyRow[]>`select * from registration_policies where tenant_id = ${this.tenantId}`;
    return row ?? null;
  }

  async savePolicy(p: PolicyFields): Promise<RegistrationPolicyRow> {
    const [row] = await this.db<RegistrationPolicyRow[]>`insert into registration_policies (tenant_id, open_registration, require_software_statement,
        allowed_grant_types, allowed_scopes, allowed_audiences, allowed_auth_methods, max_clients, rate_limit_per_minute)
      values (${this.tenantId}, ${p.open_registration}, ${p.require_software_statement}, ${p.allowed_grant_types}, ${p.allowed_scopes},
        ${p.allowed_audiences}, ${p.allowed_auth_methods}, ${p.max_clients}, ${p.rate_limit_per_minute})
      on conflict (tenant_id) do update set open_registration = excluded.open_registration, require_software_statement = excluded.require_software_statement,
        allowed_grant_types = excluded.allowed_grant_types, allowed_scopes = excluded.allowed_scopes, allowed_audiences = excluded.allowed_audiences,
        allowed_auth_methods = excluded.allowed_auth_methods, max_clients = excluded.max_clients, rate_limit_per_minute = excluded.rate_limit_per_minute,
        updated_at = now_ms()
      returning *`;
    return row!;
  }

  async insertToken(t: { id: string; hash: Buffer; description: string | null; expiresAt: number | null; maxUses: number | null; createdBy: string }): Promise<InitialAccessTokenRow> {
    const [row] = await this.db<InitialAccessTokenRow[]>`insert into initial_access_tokens (id, tenant_id, token_hash, description, expires_at, max_uses, created_by)
      values (${t.id}, ${this.tenantId}, ${t.hash}, ${t.description}, ${t.expiresAt}, ${t.maxUses}, ${t.createdBy}) returning *`;
    return row!;
  }

  async getToken(id: string): Promise<InitialAccessTokenRow | null> {
    const [row] = await this.db<InitialAccessTokenRow[]>`select * from initial_access_tokens where tenant_id = ${this.tenantId} and id = ${id}`;
    return row ?? null;
  }

  /** Newest first, limit+1 rows. */
  listTokens(f: { limit: number; cursor?: Cursor | undefined }): Promise<InitialAccessTokenRow[]> {
    const sql = this.db;
    return sql<InitialAccessTokenRow[]>`select * from initial_access_tokens where tenant_id = ${this.tenantId}
      ${f.cursor ? sql`and (created_at, id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
      order by created_at desc, id desc limit ${f.limit + 1}`;
  }

  /** Marks the token revoked (once); null when it is not the tenant's. */
  async revokeToken(id: string): Promise<InitialAccessTokenRow | null> {
    const [row] = await this.db<InitialAccessTokenRow[]>`update initial_access_tokens set revoked_at = coalesce(revoked_at, now_ms())
      where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return row ?? null;
  }

  /**
   * Spends one use of a token, in the registration's transaction, only while it is live (not revoked,
   * not expired, uses left): two registrations racing for the last use cannot both have it.
   */
  async spendToken(id: string): Promise<boolean> {
    const r = await this.db`update initial_access_tokens set uses = uses + 1
      where tenant_id = ${this.tenantId} and id = ${id} and revoked_at is null and (expires_at is null or expires_at > now_ms())
        and (max_uses is null or uses < max_uses)`;
    return r.count === 1;
  }

  async insertIssuer(i: { id: string; issuer: string; jwks: SoftwareStatementIssuerRow['jwks']; description: string | null }): Promise<SoftwareStatementIssuerRow | null> {
    const sql = this.db;
    const [row] = await sql<SoftwareStatementIssuerRow[]>`insert into software_statement_issuers (id, tenant_id, issuer, jwks, description)
      values (${i.id}, ${this.tenantId}, ${i.issuer}, ${sql.json(i.jwks as never)}, ${i.description}) on conflict (tenant_id, issuer) do nothing returning *`;
    return row ?? null;
  }

  listIssuers(): Promise<SoftwareStatementIssuerRow[]> {
    return this.db<SoftwareStatementIssuerRow[]>`select * from software_statement_issuers where tenant_id = ${this.tenantId} order by created_at desc, id desc`;
  }

  async issuer(issuer: string): Promise<SoftwareStatementIssuerRow | null> {
    const [row] = await this.db<SoftwareStatementIssuerRow[]>`select * from software_statement_issuers where tenant_id = ${this.tenantId} and issuer = ${issuer}`;
    return row ?? null;
  }

  async getIssuer(id: string): Promise<SoftwareStatementIssuerRow | null> {
    const [row] = await this.db<SoftwareStatementIssuerRow[]>`select * from software_statement_issuers where tenant_id = ${this.tenantId} and id = ${id}`;
    return row ?? null;
  }

  async deleteIssuer(id: string): Promise<SoftwareStatementIssuerRow | null> {
    const [row] = await this.db<SoftwareStatementIssuerRow[]>`delete from software_statement_issuers where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return row ?? null;
  }

  /**
   * Serialises the tenant's registrations until the transaction ends, so two racing registrations
   * cannot both take the last place under the policy's maximum.
   */
  async lockForRegistration(): Promise<void> {
    await this.db`select pg_advisory_xact_lock(hashtext(${`client-registration:${this.tenantId}`}))`;
  }

  /** Dynamically registered clients of the tenant (against the policy's maximum). */
  async countRegistered(): Promise<number> {
    const [row] = await this.db<{ n: number }[]>`select count(*)::int as n from clients where tenant_id = ${this.tenantId} and registered_dynamically`;
    return row!.n;
  }

  /** Records the registration of one of the tenant's clients (in the transaction that created it). */
  async insertRegistration(r: { clientId: string; tokenHash: Buffer; metadata: Record<string, unknown>; initialAccessTokenId: string | null; issuer: string | null }): Promise<boolean> {
    const sql = this.db;
    const res = await sql`insert into client_registrations (client_id, tenant_id, token_hash, metadata, initial_access_token_id, software_statement_issuer)
      select client_id, tenant_id, ${r.tokenHash}, ${sql.json(r.metadata as never)}, ${r.initialAccessTokenId}, ${r.issuer}
      from clients where tenant_id = ${this.tenantId} and client_id = ${r.clientId}`;
    return res.count === 1;
  }

  /** One registration; `lock` holds it (and so its token) for the rest of the transaction. */
  async registration(clientId: string, lock = false): Promise<ClientRegistrationRow | null> {
    const sql = this.db;
    const [row] = await sql<ClientRegistrationRow[]>`select * from client_registrations where tenant_id = ${this.tenantId} and client_id = ${clientId} ${lock ? sql`for update` : sql``}`;
    return row ?? null;
  }

  /** Replaces the registration access token (RFC 7592 2.2: it rotates on every update) and the echoed metadata. */
  async updateRegistration(clientId: string, tokenHash: Buffer, metadata: Record<string, unknown>, issuer: string | null): Promise<boolean> {
    const sql = this.db;
    const r = await sql`update client_registrations set token_hash = ${tokenHash}, metadata = ${sql.json(metadata as never)}, software_statement_issuer = ${issuer}, updated_at = now_ms()
      where tenant_id = ${this.tenantId} and client_id = ${clientId}`;
    return r.count === 1;
  }
}
