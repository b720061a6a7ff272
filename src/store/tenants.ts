import type { Cursor } from './cursor.js';
import type { Db, TxSql } from '../sql.js';

export type TenantStatus = 'active' | 'suspended' | 'deleting' | 'deleted';

export interface Tenant {
  id: string; name: string; display_name: string | null; status: TenantStatus; settings: Record<string, unknown>;
  created_at: number; updated_at: number; suspended_at: number | null; deleted_at: number | null;
  /** Its people administer every tenant (ops/migrations/0205_platform_tenant.sql). */
  platform: boolean;
}

/** Statuses in which nothing of the tenant is served: its tokens are inactive, logins and admin calls refused. */
export const REFUSED_STATUSES: ReadonlySet<TenantStatus> = new Set(['suspended', 'deleting', 'deleted']);

const unique = (err: unknown) => (err as { code?: string }).code === '23505';

/**
 * The row of one tenant. The tenant row is keyed by its own id (it is the tenant), so this repository
 * is bound to that id like the others, but it is not a TenantStore getter: an admin acts on other
 * tenants' rows from its own tenant. Platform-wide reads are the free functions below.
 */
export class TenantRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  /** Inserts the tenant; null when the id is taken. */
  async insert(t: { name: string; displayName?: string | null | undefined; settings?: object | undefined }): Promise<Tenant | null> {
    try {
      const [row] = await this.db<Tenant[]>`insert into tenants (id, name, display_name, settings)
        values (${this.tenantId}, ${t.name}, ${t.displayName ?? null}, ${this.db.json((t.settings ?? {}) as never)}) returning *`;
      return row!;
    } catch (err) { if (unique(err)) return null; throw err; }
  }

  async get(): Promise<Tenant | null> {
    const [row] = await this.db<Tenant[]>`select * from tenants where id = ${this.tenantId}`;
    return row ?? null;
  }

  /** The row, locked for the rest of the transaction. */
  async lock(): Promise<Tenant | null> {
    const [row] = await this.db<Tenant[]>`select * from tenants where id = ${this.tenantId} for update`;
    return row ?? null;
  }

  /** Applies the given fields (settings replaced as a whole); null when absent. */
  async update(p: { name?: string | undefined; displayName?: string | null | undefined; settings?: object | undefined }): Promise<Tenant | null> {
    const sql = this.db;
    const [row] = await sql<Tenant[]>`update tenants set
        name = ${p.name !== undefined ? p.name : sql`name`},
        display_name = ${p.displayName !== undefined ? p.displayName : sql`display_name`},
        settings = ${p.settings !== undefined ? sql.json(p.settings as never) : sql`settings`},
        updated_at = now_ms()
      where id = ${this.tenantId} returning *`;
    return row ?? null;
  }

  /** Moves the tenant to `status`, stamping when it was suspended or deleted. */
  async setStatus(status: TenantStatus): Promise<Tenant | null> {
    const sql = this.db;
    const [row] = await sql<Tenant[]>`update tenants set status = ${status},
        suspended_at = ${status === 'active' ? null : status === 'suspended' ? sql`now_ms()` : sql`suspended_at`},
        deleted_at = ${status === 'deleted' ? sql`now_ms()` : sql`deleted_at`},
        updated_at = now_ms()
      where id = ${this.tenantId} returning *`;
    return row ?? null;
  }
}

/** Platform-wide: one keyset page of every tenant, newest first (limit+1 rows). Not tenant-scoped by design. */
export function listAllTenants(db: Db, f: { limit: number; cursor?: Cursor | undefined; status?: TenantStatus | undefined }): Promise<Tenant[]> {
  return db<Tenant[]>`select * from tenants where true
      ${f.cursor ? db`and (created_at, id) < (${f.cursor.createdAt}, ${f.cursor.id})` : db``}
      ${f.status ? db`and status = ${f.status}` : db``}
    order by created_at desc, id desc limit ${f.limit + 1}`;
}

/** Platform-wide: tenants not serving (suspended, deleting, deleted), for refilling the suspension marks. */
export function listRefusedTenants(db: Db): Promise<Array<{ id: string; status: TenantStatus }>> {
  return db<Array<{ id: string; status: TenantStatus }>>`select id, status from tenants where status <> 'active'`;
}

/**
 * Statuses after which nothing new may be written for a tenant (its tombstone): its purge is under way
 * (`deleting`) or done (`deleted`). A tombstone is never lifted.
 */
export const TOMBSTONE_STATUSES: readonly TenantStatus[] = ['deleting', 'deleted'];

/**
 * Inside the transaction of a background writer (archive, rollup, quota evaluation, relay, import):
 * which of `tenantIds` are not tombstoned, each locked FOR KEY SHARE until commit. The DELETE route
 * moves a tenant to `deleting` under FOR UPDATE, which waits for a writer that locked first (whose rows
 * the purge, queued after that commit, then deletes); a writer that comes later sees `deleting` and
 * must write nothing for the tenant. So no row can be written behind the purge. Locked in id order.
 */
export async function lockLiveTenants(tx: TxSql, tenantIds: readonly string[]): Promise<Set<string>> {
  const ids = [...new Set(tenantIds)];
  if (!ids.length) return new Set();
  const rows = await tx<Array<{ id: string }>>`select id from tenants where id = any(${ids}::text[])
    and status <> all(${TOMBSTONE_STATUSES as string[]}::text[]) order by id for key share`;
  return new Set(rows.map((r) => r.id));
}

/** Platform-wide: the ids of every tombstoned tenant (the in-memory fence of each process, src/tenants/fence.ts). */
export async function listTombstonedTenants(db: Db, tenantId?: string): Promise<string[]> {
  const rows = await db<Array<{ id: string }>>`select id from tenants where status = any(${TOMBSTONE_STATUSES as string[]}::text[])
    ${tenantId === undefined ? db`` : db`and id = ${tenantId}`}`;
  return rows.map((r) => r.id);
}
