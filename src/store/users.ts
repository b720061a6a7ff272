import type { Cursor } from './cursor.js';
import { newId } from './ids.js';
import type { Db } from './sql.js';

export type UserStatus = 'active' | 'suspended' | 'locked';

export interface User {
  id: string; tenant_id: string; email: string; name: string | null; status: UserStatus;
  email_verified: boolean; metadata: Record<string, unknown>; created_at: number; updated_at: number;
}

export interface NewUser { email: string; name?: string | null | undefined; emailVerified?: boolean | undefined; metadata?: Record<string, unknown> | undefined; loggedIn?: boolean | undefined }
export interface UserFilter { limit: number; cursor?: Cursor | undefined; status?: UserStatus | undefined; email?: string | undefined; q?: string | undefined; role_id?: string | undefined }
export interface UserPatch { email?: string | undefined; name?: string | null | undefined; email_verified?: boolean | undefined; metadata?: Record<string, unknown> | undefined }

const unique = (err: unknown) => (err as { code?: string }).code === '23505';
const like = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** Users of one tenant: the admin API's reads and writes and the login flow's lookups. Addresses compare case-insensitively. */
export class UserRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  /** Inserts a user with a fresh `u_` id; null when the email is taken in the tenant. */
  async insert(u: NewUser): Promise<User | null> {
    const sql = this.db;
    const [row] = await sql<User[]>`
      insert into users (id, tenant_id, email, name, email_verified, metadata, last_login_at)
      values (${newId('u')}, ${this.tenantId}, ${u.email}, ${u.name ?? null}, ${u.emailVerified ?? false}, ${sql.json((u.metadata ?? {}) as never)}, ${u.loggedIn ? sql`now_ms()` : null})
      on conflict do nothing returning *`;
    return row ?? null;
  }

  /** Inserts many users in one statement (an import batch); addresses already taken are skipped. */
  async insertMany(us: NewUser[]): Promise<User[]> {
    if (!us.length) return [];
    const sql = this.db;
    return sql<User[]>`
      insert into users (id, tenant_id, email, name, email_verified, metadata)
      select i, ${this.tenantId}, e, n, v::boolean, m::jsonb from unnest(${us.map(() => newId('u'))}::text[], ${us.map((u) => u.email)}::text[],
        ${us.map((u) => u.name ?? null) as string[]}::text[], ${us.map((u) => String(u.emailVerified ?? false))}::text[], ${us.map((u) => JSON.stringify(u.metadata ?? {}))}::text[]) as x(i, e, n, v, m)
      on conflict do nothing returning *`;
  }

  async get(id: string): Promise<User | null> {
    const [row] = await this.db<User[]>`select * from users where tenant_id = ${this.tenantId} and id = ${id}`;
    return row ?? null;
  }

  async getByEmail(email: string): Promise<User | null> {
    const [row] = await this.db<User[]>`select * from users where tenant_id = ${this.tenantId} and lower(email) = lower(${email})`;
    return row ?? null;
  }

  /** Users with any of these addresses, keyed by lower-cased address (one query for an import batch). */
  async getByEmails(emails: string[]): Promise<Map<string, User>> {
    const rows = await this.db<User[]>`select * from users where tenant_id = ${this.tenantId} and lower(email) = any(${emails.map((e) => e.toLowerCase())}::text[])`;
    return new Map(rows.map((u) => [u.email.toLowerCase(), u]));
  }

  /** Locks a user row for a read-modify-write in the caller's transaction. */
  async lock(id: string): Promise<User | null> {
    const [row] = await this.db<User[]>`select * from users where tenant_id = ${this.tenantId} and id = ${id} for update`;
    return row ?? null;
  }

  /** Newest first; limit+1 rows (see `page`). */
  list(f: UserFilter): Promise<User[]> {
    const sql = this.db;
    return sql<User[]>`
      select u.* from users u where u.tenant_id = ${this.tenantId}
        ${f.cursor ? sql`and (u.created_at, u.id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
        ${f.status ? sql`and u.status = ${f.status}` : sql``}
        ${f.email ? sql`and lower(u.email) like ${like(f.email.toLowerCase()) + '%'}` : sql``}
        ${f.q ? sql`and (lower(u.email) like ${'%' + like(f.q.toLowerCase()) + '%'} or lower(coalesce(u.name, '')) like ${'%' + like(f.q.toLowerCase()) + '%'})` : sql``}
        ${f.role_id ? sql`and exists (select 1 from user_roles ur where ur.tenant_id = ${this.tenantId} and ur.user_id = u.id and ur.role_id = ${f.role_id})` : sql``}
      order by u.created_at desc, u.id desc limit ${f.limit + 1}`;
  }

  /** Applies the given fields; null when the user does not exist, 'email_taken' on a duplicate email. */
  async update(id: string, p: UserPatch): Promise<User | null | 'email_taken'> {
    const sql = this.db;
    try {
      const [row] = await sql<User[]>`
        update users set
          email = ${p.email !== undefined ? p.email : sql`email`},
          name = ${p.name !== undefined ? p.name : sql`name`},
          email_verified = ${p.email_verified !== undefined ? p.email_verified : sql`email_verified`},
          metadata = ${p.metadata !== undefined ? sql.json(p.metadata as never) : sql`metadata`},
          updated_at = now_ms()
        where tenant_id = ${this.tenantId} and id = ${id} returning *`;
      return row ?? null;
    } catch (err) { if (unique(err)) return 'email_taken'; throw err; }
  }

  async setStatus(id: string, status: UserStatus): Promise<User | null> {
    const [row] = await this.db<User[]>`update users set status = ${status}, updated_at = now_ms() where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return row ?? null;
  }

  async delete(id: string): Promise<User | null> {
    const [row] = await this.db<User[]>`delete from users where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return row ?? null;
  }

  /** Ends every refresh token family of a user (suspension, deletion); access tokens are cut by a revocation mark. */
  async revokeRefreshTokens(userId: string): Promise<number> {
    const r = await this.db`update refresh_tokens set status = 'revoked' where tenant_id = ${this.tenantId} and sub = ${userId} and status = 'active'`;
    return r.count;
  }

  /**
   * A login of an active user: stamps last_login_at (the code proved the address, so it is verified)
   * and returns the row in one statement; null if no active user has that address.
   */
  async touchActiveLogin(email: string): Promise<User | null> {
    // A successful sign-in ends a run of failures (the lockout counts consecutive ones).
    const [row] = await this.db<User[]>`update users set last_login_at = now_ms(), email_verified = true, failed_logins = 0
      where tenant_id = ${this.tenantId} and lower(email) = lower(${email}) and status = 'active' returning *`;
    return row ?? null;
  }

  /**
   * Counts a failed sign-in of the user with this address and locks an active user when the tenant's
   * threshold is reached; `locked` is true only for the failure that locked it. Null: no such user.
   */
  async registerFailedLogin(email: string): Promise<{ user: User; locked: boolean } | null> {
    const [row] = await this.db<(User & { just_locked: boolean })[]>`
      with s as (select coalesce((select max_failed_logins from tenant_login_lockout where tenant_id = ${this.tenantId}), 0) as max),
      cur as (select id, status as was from users where tenant_id = ${this.tenantId} and lower(email) = lower(${email}) for update)
      update users u set failed_logins = u.failed_logins + 1,
        status = case when s.max > 0 and u.failed_logins + 1 >= s.max and u.status = 'active' then 'locked' else u.status end,
        updated_at = now_ms()
      from s, cur where u.tenant_id = ${this.tenantId} and u.id = cur.id
      returning u.*, (cur.was = 'active' and u.status = 'locked') as just_locked`;
    if (!row) return null;
    const { just_locked, ...user } = row;
    return { user: user as User, locked: just_locked };
  }

  /** Sets a user's status for lock/unlock; unlocking also clears the failure count. */
  async setLockStatus(id: string, status: 'locked' | 'active'): Promise<User | null> {
    const [row] = await this.db<User[]>`update users set status = ${status}, failed_logins = 0, updated_at = now_ms()
      where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return row ?? null;
  }

  /** The tenant's automatic lock threshold (0: never). */
  async lockoutThreshold(): Promise<number> {
    const [row] = await this.db<{ max_failed_logins: number }[]>`select max_failed_logins from tenant_login_lockout where tenant_id = ${this.tenantId}`;
    return row?.max_failed_logins ?? 0;
  }

  async setLockoutThreshold(max: number): Promise<number> {
    const [row] = await this.db<{ max_failed_logins: number }[]>`insert into tenant_login_lockout (tenant_id, max_failed_logins) values (${this.tenantId}, ${max})
      on conflict (tenant_id) do update set max_failed_logins = excluded.max_failed_logins, updated_at = now_ms() returning max_failed_logins`;
    return row!.max_failed_logins;
  }
}
