import { randomBytes } from 'node:crypto';
import type { Sql, TxSql } from '../store/sql.js';

export interface User {
  id: string; tenant_id: string; email: string; name: string | null; status: 'active' | 'suspended' | 'locked';
  email_verified: boolean; metadata: Record<string, unknown>; created_at: number; updated_at: number;
}

type Db = Sql | TxSql;

export function newUserId(): string {
  return `u_${randomBytes(12).toString('hex')}`;
}

/** Every read and write is scoped by tenant. */
export async function findUserByEmail(sql: Db, tenantId: string, email: string): Promise<User | null> {
  const [u] = await sql<User[]>`select * from users where tenant_id = ${tenantId} and lower(email) = lower(${email})`;
  return u ?? null;
}

export async function getUser(sql: Db, tenantId: string, id: string): Promise<User | null> {
  const [u] = await sql<User[]>`select * from users where tenant_id = ${tenantId} and id = ${id}`;
  return u ?? null;
}

/** A login of an active user: stamps last_login_at and returns the row in one statement; null if no active user has that address. */
export async function touchActiveLogin(sql: Db, tenantId: string, email: string): Promise<User | null> {
  const [u] = await sql<User[]>`update users set last_login_at = now_ms(), email_verified = true
                                where tenant_id = ${tenantId} and lower(email) = lower(${email}) and status = 'active' returning *`;
  return u ?? null;
}

/** Inserts a user; returns null when the email is taken in the tenant. */
export async function insertUser(sql: Db, tenantId: string, u: { email: string; name?: string | null; emailVerified?: boolean; metadata?: Record<string, unknown>; loggedIn?: boolean }): Promise<User | null> {
  const [row] = await sql<User[]>`
    insert into users (id, tenant_id, email, name, email_verified, metadata, last_login_at)
    values (${newUserId()}, ${tenantId}, ${u.email}, ${u.name ?? null}, ${u.emailVerified ?? false}, ${sql.json((u.metadata ?? {}) as never)}, ${u.loggedIn ? sql`now_ms()` : null})
    on conflict do nothing returning *`;
  return row ?? null;
}
