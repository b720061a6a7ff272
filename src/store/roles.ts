import type { Cursor } from './cursor.js';
import type { Db } from '../sql.js';

export interface Role { tenant_id: string; id: string; name: string; description: string | null; permissions: string[]; created_at: number; updated_at: number }
export interface RoleAssignment { role_id: string; name: string; permissions: string[]; assigned_at: number; assigned_by: string | null }

const unique = (err: unknown) => (err as { code?: string }).code === '23505';

/** Roles of one tenant (named permission sets) and their assignment to users. */
export class RoleRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  /** Inserts a role; null when the name is taken in the tenant. */
  async insert(id: string, r: { name: string; description?: string | null | undefined; permissions: string[] }): Promise<Role | null> {
    try {
      const [row] = await this.db<Role[]>`insert into roles (tenant_id, id, name, description, permissions)
        values (${this.tenantId}, ${id}, ${r.name}, ${r.description ?? null}, ${r.permissions}) returning *`;
      return row!;
    } catch (err) { if (unique(err)) return null; throw err; }
  }

  async get(id: string): Promise<Role | null> {
    const [row] = await this.db<Role[]>`select * from roles where tenant_id = ${this.tenantId} and id = ${id}`;
    return row ?? null;
  }

  list(f: { limit: number; cursor?: Cursor | undefined; name?: string | undefined }): Promise<Role[]> {
    const sql = this.db;
    return sql<Role[]>`select * from roles where tenant_id = ${this.tenantId}
        ${f.cursor ? sql`and (created_at, id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
        ${f.name ? sql`and lower(name) = lower(${f.name})` : sql``}
      order by created_at desc, id desc limit ${f.limit + 1}`;
  }

  /** Applies the given fields; null when absent, 'name_taken' on a duplicate name. */
  async update(id: string, p: { name?: string | undefined; description?: string | null | undefined; permissions?: string[] | undefined }): Promise<Role | null | 'name_taken'> {
    const sql = this.db;
    try {
      const [row] = await sql<Role[]>`update roles set
          name = ${p.name !== undefined ? p.name : sql`name`},
          description = ${p.description !== undefined ? p.description : sql`description`},
          permissions = ${p.permissions !== undefined ? p.permissions : sql`permissions`},
          updated_at = now_ms()
        where tenant_id = ${this.tenantId} and id = ${id} returning *`;
      return row ?? null;
    } catch (err) { if (unique(err)) return 'name_taken'; throw err; }
  }

  async delete(id: string): Promise<Role | null> {
    const [row] = await this.db<Role[]>`delete from roles where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return row ?? null;
  }

  /**
   * Assigns a role; null when it was already assigned, or when the user or the role is not this
   * tenant's (user_roles' foreign key to users names the id alone, so the tenant is checked here).
   */
  async assign(userId: string, roleId: string, by: string): Promise<{ assigned_at: number } | null> {
    const [row] = await this.db<{ assigned_at: number }[]>`insert into user_roles (tenant_id, user_id, role_id, assigned_by)
      select r.tenant_id, u.id, r.id, ${by} from users u join roles r on r.tenant_id = u.tenant_id
      where u.tenant_id = ${this.tenantId} and u.id = ${userId} and r.id = ${roleId}
      on conflict do nothing returning assigned_at`;
    return row ?? null;
  }

  async unassign(userId: string, roleId: string): Promise<boolean> {
    const r = await this.db`delete from user_roles where tenant_id = ${this.tenantId} and user_id = ${userId} and role_id = ${roleId}`;
    return r.count === 1;
  }

  ofUser(userId: string): Promise<RoleAssignment[]> {
    return this.db<RoleAssignment[]>`select r.id as role_id, r.name, r.permissions, ur.assigned_at, ur.assigned_by
      from user_roles ur join roles r on r.tenant_id = ur.tenant_id and r.id = ur.role_id
      where ur.tenant_id = ${this.tenantId} and ur.user_id = ${userId} order by ur.assigned_at, r.id`;
  }

  /** The union of the permissions of a user's roles; the login flow puts these in admin tokens, the check API tests them. */
  async permissionsOf(userId: string): Promise<string[]> {
    const rows = await this.db<{ p: string }[]>`select distinct unnest(r.permissions) as p from user_roles ur
      join roles r on r.tenant_id = ur.tenant_id and r.id = ur.role_id where ur.tenant_id = ${this.tenantId} and ur.user_id = ${userId}`;
    return rows.map((r) => r.p).sort();
  }
}
