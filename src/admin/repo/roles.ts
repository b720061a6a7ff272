import type { Sql, TxSql } from '../../store/sql.js';
import type { Cursor } from '../pagination.js';

type Db = Sql | TxSql;

export interface Role { tenant_id: string; id: string; name: string; description: string | null; permissions: string[]; created_at: number; updated_at: number }
export interface RoleAssignment { role_id: string; name: string; permissions: string[]; assigned_at: number; assigned_by: string | null }

const unique = (err: unknown) => (err as { code?: string }).code === '23505';

/** Inserts a role; null when the name is taken in the tenant. */
export async function insertRole(sql: Db, tenantId: string, id: string, r: { name: string; description?: string | null; permissions: string[] }): Promise<Role | null> {
  try {
    const [row] = await sql<Role[]>`insert into roles (tenant_id, id, name, description, permissions)
      values (${tenantId}, ${id}, ${r.name}, ${r.description ?? null}, ${r.permissions}) returning *`;
    return row!;
  } catch (err) { if (unique(err)) return null; throw err; }
}

export async function getRole(sql: Db, tenantId: string, id: string): Promise<Role | null> {
  const [row] = await sql<Role[]>`select * from roles where tenant_id = ${tenantId} and id = ${id}`;
  return row ?? null;
}

export async function listRoles(sql: Db, tenantId: string, f: { limit: number; cursor?: Cursor | undefined; name?: string | undefined }): Promise<Role[]> {
  return sql<Role[]>`select * from roles where tenant_id = ${tenantId}
      ${f.cursor ? sql`and (created_at, id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
      ${f.name ? sql`and lower(name) = lower(${f.name})` : sql``}
    order by created_at desc, id desc limit ${f.limit + 1}`;
}

/** Applies the given fields; null when absent, 'name_taken' on a duplicate name. */
export async function updateRole(sql: Db, tenantId: string, id: string, p: { name?: string; description?: string | null; permissions?: string[] }): Promise<Role | null | 'name_taken'> {
  try {
    const [row] = await sql<Role[]>`update roles set
        name = ${p.name !== undefined ? p.name : sql`name`},
        description = ${p.description !== undefined ? p.description : sql`description`},
        permissions = ${p.permissions !== undefined ? p.permissions : sql`permissions`},
        updated_at = now_ms()
      where tenant_id = ${tenantId} and id = ${id} returning *`;
    return row ?? null;
  } catch (err) { if (unique(err)) return 'name_taken'; throw err; }
}

export async function deleteRole(sql: Db, tenantId: string, id: string): Promise<Role | null> {
  const [row] = await sql<Role[]>`delete from roles where tenant_id = ${tenantId} and id = ${id} returning *`;
  return row ?? null;
}

/** Assigns a role; false when it was already assigned. */
export async function assignRole(sql: Db, tenantId: string, userId: string, roleId: string, by: string): Promise<{ assigned_at: number } | null> {
  const [row] = await sql<{ assigned_at: number }[]>`insert into user_roles (tenant_id, user_id, role_id, assigned_by)
    values (${tenantId}, ${userId}, ${roleId}, ${by}) on conflict do nothing returning assigned_at`;
  return row ?? null;
}

export async function unassignRole(sql: Db, tenantId: string, userId: string, roleId: string): Promise<boolean> {
  const r = await sql`delete from user_roles where tenant_id = ${tenantId} and user_id = ${userId} and role_id = ${roleId}`;
  return r.count === 1;
}

export async function userRoles(sql: Db, tenantId: string, userId: string): Promise<RoleAssignment[]> {
  return sql<RoleAssignment[]>`select r.id as role_id, r.name, r.permissions, ur.assigned_at, ur.assigned_by
    from user_roles ur join roles r on r.tenant_id = ur.tenant_id and r.id = ur.role_id
    where ur.tenant_id = ${tenantId} and ur.user_id = ${userId} order by ur.assigned_at, r.id`;
}

/** The union of the permissions of a user's roles; the login flow puts these in admin tokens, the check API tests them. */
export async function userPermissions(sql: Db, tenantId: string, userId: string): Promise<string[]> {
  const rows = await sql<{ p: string }[]>`select distinct unnest(r.permissions) as p from user_roles ur
    join roles r on r.tenant_id = ur.tenant_id and r.id = ur.role_id where ur.tenant_id = ${tenantId} and ur.user_id = ${userId}`;
  return rows.map((r) => r.p).sort();
}
