import { randomBytes } from 'node:crypto';
import type postgres from 'postgres';
import { decrypt, deriveKey, encrypt } from '../tokens/secrets.js';

/** The pool (src/sql.ts's client type), named from the driver so this folder stays below store/. */
type Db = postgres.Sql<Record<string, never>>;

/** A user's personal data: what lives sealed in a PII partition. */
export interface PiiRecord {
  email: string;
  name: string | null;
  metadata: Record<string, unknown>;
}

/**
 * Per-tenant data keys (AES-256), wrapped under a key derived from KEY_ENCRYPTION_KEY and kept in
 * `tenant_data_keys`; unwrapped keys are cached for the life of the process (a key never changes).
 */
export class TenantDataKeys {
  private readonly wrapKey: Buffer;
  private readonly cache = new Map<string, Buffer>();

  constructor(kek: Buffer) { this.wrapKey = deriveKey(kek, 'tenant-data-keys'); }

  cached(tenantId: string): Buffer | undefined { return this.cache.get(tenantId); }

  /** The tenant's key, created on first use (two processes creating it at once agree on the stored one). */
  async get(db: Db, tenantId: string): Promise<Buffer> {
    const hit = this.cache.get(tenantId);
    if (hit) return hit;
    let [row] = await db<{ wrapped: Buffer }[]>`select wrapped from tenant_data_keys where tenant_id = ${tenantId}`;
    if (!row) {
      const fresh = encrypt(this.wrapKey, randomBytes(32), `tenant-data-key:${tenantId}`);
      [row] = await db<{ wrapped: Buffer }[]>`insert into tenant_data_keys (tenant_id, wrapped) values (${tenantId}, ${fresh})
        on conflict (tenant_id) do update set tenant_id = excluded.tenant_id returning wrapped`;
    }
    const key = decrypt(this.wrapKey, row!.wrapped, `tenant-data-key:${tenantId}`);
    this.cache.set(tenantId, key);
    return key;
  }

  /** A purged tenant's key must not outlive it in memory. */
  forget(tenantId: string): void { this.cache.delete(tenantId); }
}

// Sealed rows are bound to their tenant and user: a row copied onto another user does not open.
const aad = (tenantId: string, userId: string) => `user-pii:${tenantId}:${userId}`;

export function sealPii(key: Buffer, tenantId: string, userId: string, r: PiiRecord): Buffer {
  return encrypt(key, Buffer.from(JSON.stringify({ e: r.email, n: r.name, m: r.metadata })), aad(tenantId, userId));
}

export function openPii(key: Buffer, tenantId: string, userId: string, sealed: Buffer): PiiRecord {
  const o = JSON.parse(decrypt(key, sealed, aad(tenantId, userId)).toString('utf8')) as { e: string; n: string | null; m: Record<string, unknown> };
  return { email: o.e, name: o.n, metadata: o.m };
}
