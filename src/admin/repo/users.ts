import type { Sql, TxSql } from '../../store/sql.js';
import type { User } from '../../users/repository.js';
import type { Cursor } from '../pagination.js';

type Db = Sql | TxSql;

export interface UserFilter { limit: number; cursor?: Cursor | undefined; status?: string | undefined; email?: string | undefined; q?: string | undefined; role_id?: string | undefined }

/** Newest first; limit+1 rows. Every query carries the tenant. */
export async function listUsers(sql: Db, tenantId: string, f: UserFilter): Promise<User[]> {
  const like = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);
  return sql<User[]>`
    select u.* from users u where u.tenant_id = ${tenantId}
      ${f.cursor ? sql`and (u.created_at, u.id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
      ${f.status ? sql`and u.status = ${f.status}` : sql``}
      ${f.email ? sql`and lower(u.email) like ${like(f.email.toLowerCase()) + '%'}` : sql``}
      ${f.q ? sql`and (lower(u.email) like ${'%' + like(f.q.toLowerCase()) + '%'} or lower(coalesce(u.name, '')) like ${'%' + like(f.q.toLowerCase()) + '%'})` : sql``}
      ${f.role_id ? sql`and exists (select 1 from user_roles ur where ur.tenant_id = ${tenantId} and ur.user_id = u.id and ur.role_id = ${f.role_id})` : sql``}
    order by u.created_at desc, u.id desc limit ${f.limit + 1}`;
}

export interface UserPatch { email?: string; name?: string | null; email_verified?: boolean; metadata?: Record<string, unknown> }

/** Applies the given fields; returns null when the user does not exist, 'email_taken' on a duplicate email. */
export async function updateUser(sql: Db, tenantId: string, id: string, p: UserPatch): Promise<User | null | 'email_taken'> {
  try {
    const [row] = await sql<User[]>`
      update users set
        email = ${p.email !== undefined ? p.email : sql`email`},
        name = ${p.name !== undefined ? p.name : sql`name`},
        email_verified = ${p.email_verified !== undefined ? p.email_verified : sql`email_verified`},
        metadata = ${p.metadata !== undefined ? sql.json(p.metadata as never) : sql`metadata`},
        updated_at = now_ms()
      where tenant_id = ${tenantId} and id = ${id} returning *`;
    return row ?? null;
  } catch (err) {
    if ((err as { code?: string }).code === '23505') return 'email_taken';
    throw err;
  }
}

export async function setUserStatus(sql: Db, tenantId: string, id: string, status: User['status']): Promise<User | null> {
  const [row] = await sql<User[]>`update users set status = ${status}, updated_at = now_ms() where tenant_id = ${tenantId} and id = ${id} returning *`;
  return row ?? null;
}

export async function deleteUser(sql: Db, tenantId: string, id: string): Promise<User | null> {
  const [row] = await sql<User[]>`delete from users where tenant_id = ${tenantId} and id = ${id} returning *`;
  return row ?? null;
}

/** Locks a user row for a read-modify-write in the caller's transaction. */
export async function lockUser(sql: Db, tenantId: string, id: string): Promise<User | null> {
  const [row] = await sql<User[]>`select * from users where tenant_id = ${tenantId} and id = ${id} for update`;
  return row ?? null;
}

/** Ends every refresh token family of a user (suspension, deletion); access tokens are cut by a revocation mark. */
export async function revokeUserRefreshTokens(sql: Db, tenantId: string, userId: string): Promise<number> {
  const r = await sql`update refresh_tokens set status = 'revoked' where tenant_id = ${tenantId} and sub = ${userId} and status = 'active'`;
  return r.count;
}
