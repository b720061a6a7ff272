import type { Db } from '../sql.js';

export type CheckOperation = 'check' | 'batch' | 'subscribe';
export type CheckTier = 'strict' | 'moderate' | 'lenient';
/** A key allows at least one operation. */
export type CheckOperations = [CheckOperation, ...CheckOperation[]];

export interface CheckKeyRow {
  tenant_id: string; id: string; client_id: string; name: string; key_prefix: string; allowed_operations: CheckOperations; rate_limit_tier: CheckTier;
  is_active: boolean; expires_at: number | null; created_by: string | null; revoked_at: number | null; created_at: number; updated_at: number;
}
export interface NewCheckKey {
  id: string; clientId: string; name: string; prefix: string; hash: Buffer; operations: CheckOperations; tier: CheckTier; expiresAt: number | null; createdBy: string;
}
export interface CheckKeyFilter { page: number; limit: number; client_id?: string | undefined; is_active?: boolean | undefined }

/** Check API keys of one tenant (only their keyed hash is stored). */
export class CheckApiKeyRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  /** Inserts a key for one of the tenant's clients; null when the client is not the tenant's. */
  async insert(k: NewCheckKey): Promise<CheckKeyRow | null> {
    const [row] = await this.db<CheckKeyRow[]>`insert into check_api_keys (tenant_id, id, client_id, name, key_prefix, key_hash, allowed_operations, rate_limit_tier, expires_at, created_by)
      select ${this.tenantId}, ${k.id}, client_id, ${k.name}, ${k.prefix}, ${k.hash}, ${k.operations}, ${k.tier}, ${k.expiresAt}, ${k.createdBy}
      from clients where tenant_id = ${this.tenantId} and client_id = ${k.clientId}
      returning *`;
    return row ?? null;
  }

  /** One key; `lock` holds its row until the transaction ends (read-modify-write). */
  async get(id: string, lock = false): Promise<CheckKeyRow | null> {
    const sql = this.db;
    const [row] = await sql<CheckKeyRow[]>`select * from check_api_keys where tenant_id = ${this.tenantId} and id = ${id} ${lock ? sql`for update` : sql``}`;
    return row ?? null;
  }

  /** One page, newest first, and how many keys match in all; `is_active` means what the record shows (not revoked and not expired). */
  async list(f: CheckKeyFilter): Promise<{ rows: CheckKeyRow[]; total: number }> {
    const sql = this.db;
    // Activity as the record shows it (src/check/keys.ts checkKeyView): not revoked and not past expires_at.
    const active = sql`(is_active and (expires_at is null or expires_at > now_ms()))`;
    const filters = sql`${f.client_id ? sql`and client_id = ${f.client_id}` : sql``}
      ${f.is_active === undefined ? sql`` : f.is_active ? sql`and ${active}` : sql`and not ${active}`}`;
    const [rows, [count]] = await Promise.all([
      sql<CheckKeyRow[]>`select * from check_api_keys where tenant_id = ${this.tenantId} ${filters} order by created_at desc, id desc limit ${f.limit} offset ${(f.page - 1) * f.limit}`,
      sql<{ n: number }[]>`select count(*)::int as n from check_api_keys where tenant_id = ${this.tenantId} ${filters}`,
    ]);
    return { rows, total: count!.n };
  }

  /** Marks the key revoked; null when it is not the tenant's. */
  async revoke(id: string): Promise<CheckKeyRow | null> {
    const [row] = await this.db<CheckKeyRow[]>`update check_api_keys set is_active = false, revoked_at = now_ms(), updated_at = now_ms()
      where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return row ?? null;
  }
}

