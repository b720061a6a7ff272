import type { Cursor } from './cursor.js';
import type { Db } from '../sql.js';

/** A resource server of one tenant (RFC 8707 resource, RFC 9728 protected resource). */
export interface ResourceServer {
  tenant_id: string; id: string; identifier: string; name: string; scopes: string[]; documentation_uri: string | null;
  created_at: number; updated_at: number;
}

export interface NewResourceServer { identifier: string; name: string; scopes: string[]; documentation_uri?: string | null | undefined }
export type ResourceServerPatch = Partial<{ [K in keyof NewResourceServer]: NewResourceServer[K] | undefined }>;

/** The most a tenant registers: the whole set is cached per process (src/resources/cache.ts). */
export const MAX_RESOURCE_SERVERS = 500;

const unique = (err: unknown) => (err as { code?: string }).code === '23505';

/** Resource servers of one tenant, by id or by identifier. */
export class ResourceServerRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  /** Inserts one; null when the identifier is already registered in the tenant. */
  async insert(id: string, r: NewResourceServer): Promise<ResourceServer | null> {
    try {
      const [row] = await this.db<ResourceServer[]>`insert into resource_servers (tenant_id, id, identifier, name, scopes, documentation_uri)
        values (${this.tenantId}, ${id}, ${r.identifier}, ${r.name}, ${r.scopes}, ${r.documentation_uri ?? null}) returning *`;
      return row!;
    } catch (err) { if (unique(err)) return null; throw err; }
  }

  async get(id: string): Promise<ResourceServer | null> {
    const [row] = await this.db<ResourceServer[]>`select * from resource_servers where tenant_id = ${this.tenantId} and id = ${id}`;
    return row ?? null;
  }

  async count(): Promise<number> {
    const [row] = await this.db<{ n: number }[]>`select count(*)::int as n from resource_servers where tenant_id = ${this.tenantId}`;
    return row!.n;
  }

  list(f: { limit: number; cursor?: Cursor | undefined; identifier?: string | undefined }): Promise<ResourceServer[]> {
    const sql = this.db;
    return sql<ResourceServer[]>`select * from resource_servers where tenant_id = ${this.tenantId}
        ${f.cursor ? sql`and (created_at, id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
        ${f.identifier ? sql`and identifier = ${f.identifier}` : sql``}
      order by created_at desc, id desc limit ${f.limit + 1}`;
  }

  /** Every resource server of the tenant (at most MAX_RESOURCE_SERVERS), for the per-process cache. */
  all(): Promise<ResourceServer[]> {
    return this.db<ResourceServer[]>`select * from resource_servers where tenant_id = ${this.tenantId} order by id limit ${MAX_RESOURCE_SERVERS}`;
  }

  /** Applies the given fields; null when absent, 'identifier_taken' on a duplicate identifier. */
  async update(id: string, p: ResourceServerPatch): Promise<ResourceServer | null | 'identifier_taken'> {
    const sql = this.db;
    try {
      const [row] = await sql<ResourceServer[]>`update resource_servers set
          identifier = ${p.identifier !== undefined ? p.identifier : sql`identifier`},
          name = ${p.name !== undefined ? p.name : sql`name`},
          scopes = ${p.scopes !== undefined ? p.scopes : sql`scopes`},
          documentation_uri = ${p.documentation_uri !== undefined ? p.documentation_uri : sql`documentation_uri`},
          updated_at = now_ms()
        where tenant_id = ${this.tenantId} and id = ${id} returning *`;
      return row ?? null;
    } catch (err) { if (unique(err)) return 'identifier_taken'; throw err; }
  }

  async delete(id: string): Promise<ResourceServer | null> {
    const [row] = await this.db<ResourceServer[]>`delete from resource_servers where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return row ?? null;
  }
}
