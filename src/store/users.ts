import { ServiceUnavailable } from '../errors.js';
import type { IndexEntries, PiiVault } from '../pii/vault.js';
import type { PiiPartition } from '../pii/partitions.js';
import type { PiiRecord } from '../pii/sealing.js';
import { resolvePartition } from '../pii/residence.js';
import { isEmail, normalizeEmail } from '../users/email.js';
import type { Cursor } from './cursor.js';
import { newId } from './ids.js';
import { PiiSettingsRepository } from '../pii/settings.js';
import { byteaArray, type Db, type TxSql } from '../sql.js';

export type UserStatus = 'active' | 'suspended' | 'locked';

export interface User {
  id: string; tenant_id: string; email: string; name: string | null; status: UserStatus;
  email_verified: boolean; metadata: Record<string, unknown>; created_at: number; updated_at: number;
  /** The PII partition holding the user's sealed personal data. */
  pii_partition: string;
}

export interface NewUser { email: string; name?: string | null | undefined; emailVerified?: boolean | undefined; metadata?: Record<string, unknown> | undefined; loggedIn?: boolean | undefined }
export interface UserFilter { limit: number; cursor?: Cursor | undefined; status?: UserStatus | undefined; email?: string | undefined; q?: string | undefined; role_id?: string | undefined }
export interface UserPatch { email?: string | undefined; name?: string | null | undefined; email_verified?: boolean | undefined; metadata?: Record<string, unknown> | undefined }

/** A core row (no personal data) and, when its partition is in the main database, its sealed PII. */
type CoreRow = Omit<User, 'email' | 'name' | 'metadata'> & { sealed: Buffer | null };

type Fragment = ReturnType<Db['unsafe']>;
const unique = (err: unknown) => (err as { code?: string }).code === '23505';
const core = (a: string) => `${a}.id, ${a}.tenant_id, ${a}.status, ${a}.email_verified, ${a}.pii_partition, ${a}.created_at, ${a}.updated_at`;
/**
 * Index entries matched with scalar parameters from `$first` on (`generation = $i and bidx = $i+1`, or-ed):
 * Postgres plans such a probe generically as well as per call, so a prepared statement stops being re-planned
 * at each execution, which the `= any(array)` form was (run 47 in perf/RESULTS.md).
 */
function entryPredicate(first: number, n: number): string {
  return Array.from({ length: n }, (_, k) => `(generation = $${first + 2 * k}::int and bidx = $${first + 2 * k + 1}::bytea)`).join(' or ');
}
function entryParams(e: { generations: number[]; bidxs: Buffer[] }): unknown[] {
  return e.generations.flatMap((g, k) => [g, e.bidxs[k]]);
}

/** A new user about to be written (UserRepository.prepareNew). */
interface NewUserWrite { id: string; rec: PiiRecord; part: PiiPartition; sealed: Buffer; w: IndexEntries; r: IndexEntries }
/** Where the read entries' parameters start: after $1 (tenant), $2 (id) and the write entries. */
const readAt = (n: NewUserWrite) => 3 + 2 * n.w.generations.length;

/**
 * The CTEs that write a new user unless `taken` holds: `i` its index entries, `c` its core row (only when
 * every entry went in), `p` its sealed row when the partition is in the main database; parameters as
 * UserRepository.newUserParams.
 */
function newUserCtes(n: NewUserWrite, taken: string): string {
  const more = readAt(n) + 2 * n.r.generations.length;
  return `i as (insert into user_email_index (tenant_id, generation, bidx, user_id)
          select $1, v.g, v.b, $2 from (values ${n.w.generations.map((_, k) => `($${3 + 2 * k}::int, $${4 + 2 * k}::bytea)`).join(', ')}) as v(g, b)
          where not ${taken} on conflict do nothing returning 1),
        c as (insert into users (id, tenant_id, email, email_verified, metadata, last_login_at, pii_partition)
          select $2, $1, null, $${more}::boolean, '{}', case when $${more + 1}::boolean then now_ms() end, $${more + 2}
          where (select count(*) from i) = ${n.w.generations.length} returning *)
        ${n.part.inMain ? `, p as (insert into "pii_${n.part.name}"."user_pii" (tenant_id, user_id, sealed) select $1, $2, $${more + 3}::bytea from c)` : ''}`;
}

/** A user as callers see it: the core row's columns (bigints as numbers) and the personal data. */
function userOf(c: Omit<CoreRow, 'sealed'>, pii: PiiRecord): User {
  return { ...c, created_at: Number(c.created_at), updated_at: Number(c.updated_at), ...pii };
}
// Rows decrypted per round when a search must read personal data (prefix and substring searches).
const SCAN_BATCH = 500;

/**
 * Users of one tenant: the admin API's reads and writes and the login flow's lookups. The core row
 * (`users`) holds no personal data: email, name and metadata are sealed in the user's PII partition
 * (src/pii/), and an address is found through its blind index (`user_email_index`), one entry per
 * lookup key in use. Addresses compare case-insensitively (the index is of the normalized address).
 */
export class UserRepository {
  constructor(private readonly db: Db, private readonly tenantId: string, private readonly vault: PiiVault) {}

  /** Columns and joins that read a user with its sealed PII in one statement (partitions in the main database). */
  private withPii(alias: string) {
    const j = this.vault.joinSql(alias);
    return { cols: this.db.unsafe(`${core(alias)}, ${j.column}`), joins: this.db.unsafe(j.joins) };
  }

  /** Opens the PII of each row, reading rows of partitions in other databases in one query per partition. */
  private async hydrate(rows: CoreRow[]): Promise<User[]> {
    if (!rows.length) return [];
    const missing = new Map<string, CoreRow[]>();
    for (const r of rows) if (!r.sealed) missing.set(r.pii_partition, [...(missing.get(r.pii_partition) ?? []), r]);
    for (const [name, rs] of missing) {
      const p = this.vault.partition(name);
      if (p.inMain) continue;
      const found = await this.vault.onPartition(p, (s) => s<{ user_id: string; sealed: Buffer }[]>`
        select user_id, sealed from ${s(p.table)} where tenant_id = ${this.tenantId} and user_id = any(${rs.map((r) => r.id)}::text[])`);
      const by = new Map(found.map((f) => [f.user_id, f.sealed]));
      for (const r of rs) r.sealed = by.get(r.id) ?? null;
    }
    return Promise.all(rows.map(async ({ sealed, ...c }) => {
      // A core row without its personal data: an interrupted write or move (src/pii/moves.ts finishes moves).
      if (!sealed) throw new ServiceUnavailable(`The personal data of user ${c.id} is unavailable.`, 5);
      const pii = await this.vault.open(this.tenantId, c.id, sealed);
      return userOf(c, pii);
    }));
  }

  private async one(rows: CoreRow[]): Promise<User | null> {
    const [u] = await this.hydrate(rows.slice(0, 1));
    return u ?? null;
  }

  /** Where a new user's PII goes (tenant policy, residence, rules, default). */
  private async partitionResolver(): Promise<(r: PiiRecord) => string> {
    const settings = await this.vault.settings(this.tenantId, () => new PiiSettingsRepository(this.db, this.tenantId).get());
    const available = new Set(this.vault.partitions.names());
    return (r) => resolvePartition(settings, r, available);
  }

  /**
   * The user id an address is indexed under (any read key; entries of two generations name the same user),
   * as a scalar subquery: evaluated once before the outer statement, which then reads users by primary key
   * whatever the planner believes about the users table (an `in (select ...)` was planned as a scan of the
   * tenant's users on fresh statistics: 43 ms instead of 0.1 ms for a login).
   */
  private byAddress(email: string) {
    const e = this.vault.readEntries(email);
    // Scalar parameters, as entryPredicate (an `= any(array)` probe is re-planned at every execution).
    const match = e.generations.map((g, k) => this.db`(generation = ${g}::int and bidx = ${e.bidxs[k]!}::bytea)`)
      .reduce((a, b) => this.db`${a} or ${b}`);
    return this.db`(select user_id from user_email_index where tenant_id = ${this.tenantId} and (${match}) limit 1)`;
  }

  /** What writing a new user needs: a fresh `u_` id, the record, its partition, the sealed row and the index entries. */
  private async prepareNew(u: NewUser): Promise<NewUserWrite> {
    const partitionOf = await this.partitionResolver();
    const id = newId('u');
    const rec: PiiRecord = { email: u.email, name: u.name ?? null, metadata: u.metadata ?? {} };
    const part = this.vault.partition(partitionOf(rec));
    return { id, rec, part, sealed: await this.vault.seal(this.tenantId, id, rec), w: this.vault.writeEntries(u.email), r: this.vault.readEntries(u.email) };
  }

  /** The parameters of newUserCtes: $1 tenant, $2 id, the write then the read entries, verified, logged in, partition, the sealed row. */
  private newUserParams(n: NewUserWrite, u: NewUser): unknown[] {
    return [this.tenantId, n.id, ...entryParams(n.w), ...entryParams(n.r), u.emailVerified ?? false, Boolean(u.loggedIn), n.part.name, ...(n.part.inMain ? [n.sealed] : [])];
  }

  /**
   * A successful email-code login in one statement: stamps the active user with this address, or creates
   * the user when no one has it (a first login). Null when the address belongs to a user who is not
   * active, or a concurrent first login took it; the caller then reads the user. A new user whose
   * partition is in another database takes the two-step path (its PII row is written there first).
   */
  async loginOrCreate(u: NewUser): Promise<{ user: User; created: boolean } | null> {
    const n = await this.prepareNew(u);
    if (!n.part.inMain) {
      const returning = await this.touchActiveLogin(u.email);
      if (returning) return { user: returning, created: false };
      const created = await this.insertPrepared(n, u);
      return created ? { user: created, created: true } : null;
    }
    // The login hot path: one prepared statement per partition and key count. Data-modifying CTEs all run;
    // `found` decides which of them writes (the update of a returning user, or the three inserts of a new one).
    const text = this.vault.statement(`login-or-create:${n.part.name}:${n.w.generations.length}:${n.r.generations.length}`, (j) => `
      with found as (select user_id from user_email_index where tenant_id = $1 and (${entryPredicate(readAt(n), n.r.generations.length)}) limit 1),
        x as (update users set last_login_at = now_ms(), email_verified = true, failed_logins = 0, updated_at = now_ms()
          where tenant_id = $1 and status = 'active' and id = (select user_id from found) returning *),
        ${newUserCtes(n, 'exists (select 1 from found)')}
      select ${core('x')}, ${j('x').column}, false as created from x ${j('x').joins}
      union all
      select ${core('c')}, null::bytea as sealed, true as created from c`);
    const [row] = await this.db.unsafe<(CoreRow & { created: boolean })[]>(text, this.newUserParams(n, u) as never[], { prepare: true });
    if (!row) return null;
    const { created, ...c } = row;
    if (!created) {
      const user = await this.one([c]);
      return user ? { user, created: false } : null;
    }
    const { sealed: _s, ...fresh } = c;
    return { user: userOf(fresh, n.rec), created: true };
  }

  /** Inserts a user with a fresh `u_` id; null when the email is taken in the tenant. */
  async insert(u: NewUser): Promise<User | null> {
    return this.insertPrepared(await this.prepareNew(u), u);
  }

  private async insertPrepared(n: NewUserWrite, u: NewUser): Promise<User | null> {
    if (!n.part.inMain) await this.writeElsewhere([{ id: n.id, partition: n.part.name, sealed: n.sealed }]);
    // The first login's insert: one prepared statement per partition and key count (the batch statement of
    // insertMany costs Postgres several times more to plan for one row). Nothing is written if the address is taken.
    const text = this.vault.statement(`insert-user:${n.part.name}:${n.w.generations.length}:${n.r.generations.length}`, () => `
      with ${newUserCtes(n, `exists (select 1 from user_email_index where tenant_id = $1 and (${entryPredicate(readAt(n), n.r.generations.length)}))`)}
      select ${core('c')} from c`);
    let row: Omit<CoreRow, 'sealed'> | undefined;
    try {
      [row] = await this.db.unsafe<Omit<CoreRow, 'sealed'>[]>(text, this.newUserParams(n, u) as never[], { prepare: true });
    } finally {
      if (!row && !n.part.inMain) await this.removeElsewhere([{ id: n.id, partition: n.part.name }]);
    }
    return row ? userOf(row, n.rec) : null;
  }

  /**
   * Inserts many users in one statement (an import batch, or one user); addresses already taken (under
   * any lookup key in use, or earlier in the batch) are skipped. A user of a partition in another
   * database has its PII written there first, and removed again when the user was not inserted.
   */
  async insertMany(us: NewUser[]): Promise<User[]> {
    if (!us.length) return [];
    const sql = this.db;
    const t = this.tenantId;
    const nKeys = this.vault.keyring.writeKeys().length;
    const partitionOf = await this.partitionResolver();
    const rows = await Promise.all(us.map(async (u) => {
      const id = newId('u');
      const rec: PiiRecord = { email: u.email, name: u.name ?? null, metadata: u.metadata ?? {} };
      const partition = partitionOf(rec);
      return { id, rec, partition, u, sealed: await this.vault.seal(t, id, rec), write: this.vault.writeEntries(u.email), read: this.vault.readEntries(u.email) };
    }));
    const flat = (pick: (r: typeof rows[number]) => { generations: number[]; bidxs: Buffer[] }) => {
      const ids: string[] = []; const gens: number[] = []; const bidxs: Buffer[] = [];
      for (const r of rows) { const e = pick(r); e.generations.forEach((g, i) => { ids.push(r.id); gens.push(g); bidxs.push(e.bidxs[i]!); }); }
      return { ids, gens, bidxs };
    };
    const w = flat((r) => r.write);
    const p = flat((r) => r.read);
    const elsewhere = rows.filter((r) => !this.vault.partition(r.partition).inMain);
    await this.writeElsewhere(elsewhere);
    const inMain = this.vault.partitions.inMain();
    let inserted: CoreRow[];
    try {
      inserted = await sql<CoreRow[]>`
        with probe as (select * from unnest(${p.ids}::text[], ${p.gens}::int[], ${byteaArray(this.db, p.bidxs)}::bytea[]) as x(user_id, generation, bidx)),
        taken as (select distinct probe.user_id from probe join user_email_index i on i.tenant_id = ${t} and i.generation = probe.generation and i.bidx = probe.bidx),
        ent as (select * from unnest(${w.ids}::text[], ${w.gens}::int[], ${byteaArray(this.db, w.bidxs)}::bytea[]) with ordinality as x(user_id, generation, bidx, n)
                where x.user_id not in (select user_id from taken)),
        i as (insert into user_email_index (tenant_id, generation, bidx, user_id)
              select ${t}, generation, bidx, user_id from ent order by n on conflict do nothing returning user_id),
        ok as (select user_id from i group by user_id having count(*) = ${nKeys}),
        src as (select * from unnest(${rows.map((r) => r.id)}::text[], ${rows.map((r) => String(r.u.emailVerified ?? false))}::text[],
                 ${rows.map((r) => String(Boolean(r.u.loggedIn)))}::text[], ${rows.map((r) => r.partition)}::text[], ${byteaArray(this.db, rows.map((r) => r.sealed))}::bytea[])
                 as x(id, verified, logged_in, partition, sealed) where x.id in (select user_id from ok)),
        c as (insert into users (id, tenant_id, email, email_verified, metadata, last_login_at, pii_partition)
              select id, ${t}, null, verified::boolean, '{}', case when logged_in::boolean then now_ms() end, partition from src returning *)
        ${sql.unsafe(inMain.map((part, k) => `, p${k} as (insert into "pii_${part.name}"."user_pii" (tenant_id, user_id, sealed)
              select c.tenant_id, c.id, src.sealed from c join src on src.id = c.id where src.partition = '${part.name}')`).join(''))}
        select ${sql.unsafe(core('c'))}, null::bytea as sealed from c`;
    } catch (err) {
      await this.removeElsewhere(elsewhere);
      throw err;
    }
    const done = new Set(inserted.map((r) => r.id));
    await this.removeElsewhere(elsewhere.filter((r) => !done.has(r.id)));
    const rec = new Map(rows.map((r) => [r.id, r.rec]));
    return inserted.map(({ sealed: _s, ...c }) => userOf(c, rec.get(c.id)!));
  }

  private async writeElsewhere(rows: Array<{ id: string; partition: string; sealed: Buffer }>): Promise<void> {
    for (const name of new Set(rows.map((r) => r.partition))) {
      const part = this.vault.partition(name);
      const rs = rows.filter((r) => r.partition === name);
      await this.vault.onPartition(part, (s) => s`insert into ${s(part.table)} (tenant_id, user_id, sealed)
        select ${this.tenantId}, id, sealed from unnest(${rs.map((r) => r.id)}::text[], ${byteaArray(this.db, rs.map((r) => r.sealed))}::bytea[]) as x(id, sealed)`);
    }
  }

  private async removeElsewhere(rows: Array<{ id: string; partition: string }>): Promise<void> {
    for (const name of new Set(rows.map((r) => r.partition))) {
      const part = this.vault.partition(name);
      const ids = rows.filter((r) => r.partition === name).map((r) => r.id);
      await this.vault.onPartition(part, (s) => s`delete from ${s(part.table)} where tenant_id = ${this.tenantId} and user_id = any(${ids}::text[])`);
    }
  }

  async get(id: string): Promise<User | null> {
    const q = this.withPii('u');
    return this.one(await this.db<CoreRow[]>`select ${q.cols} from users u ${q.joins} where u.tenant_id = ${this.tenantId} and u.id = ${id}`);
  }

  async getByEmail(email: string): Promise<User | null> {
    const q = this.withPii('u');
    return this.one(await this.db<CoreRow[]>`select ${q.cols} from users u ${q.joins} where u.tenant_id = ${this.tenantId} and u.id = ${this.byAddress(email)}`);
  }

  /** Users with any of these addresses, keyed by normalized address (one query for an import batch). */
  async getByEmails(emails: string[]): Promise<Map<string, User>> {
    if (!emails.length) return new Map();
    const gens: number[] = []; const bidxs: Buffer[] = [];
    for (const e of emails) { const x = this.vault.readEntries(e); gens.push(...x.generations); bidxs.push(...x.bidxs); }
    const q = this.withPii('u');
    const rows = await this.db<CoreRow[]>`select ${q.cols} from users u ${q.joins} where u.tenant_id = ${this.tenantId} and u.id in (
      select user_id from user_email_index where tenant_id = ${this.tenantId} and generation = any(${[...new Set(gens)]}::int[]) and bidx = any(${byteaArray(this.db, bidxs)}::bytea[]))`;
    const users = await this.hydrate(rows);
    return new Map(users.map((u) => [normalizeEmail(u.email), u]));
  }

  /** Locks a user row for a read-modify-write in the caller's transaction. */
  async lock(id: string): Promise<User | null> {
    const q = this.withPii('u');
    return this.one(await this.db<CoreRow[]>`select ${q.cols} from users u ${q.joins} where u.tenant_id = ${this.tenantId} and u.id = ${id} for update of u`);
  }

  /**
   * Newest first; limit+1 rows (see `page`). An `email` filter that is a whole address is an index lookup;
   * a prefix or a `q` substring must read personal data, so it decrypts rows in batches from the cursor
   * on until it has a page (a cost proportional to the rows scanned: docs/pii.md).
   */
  async list(f: UserFilter): Promise<User[]> {
    const sql = this.db;
    const exact = f.email && !f.q && isEmail(f.email) ? f.email : undefined;
    const scan = !exact && (f.email || f.q);
    const q = this.withPii('u');
    const batch = (cursor: Cursor | undefined, limit: number) => sql<CoreRow[]>`
      select ${q.cols} from users u ${q.joins} where u.tenant_id = ${this.tenantId}
        ${cursor ? sql`and (u.created_at, u.id) < (${cursor.createdAt}, ${cursor.id})` : sql``}
        ${f.status ? sql`and u.status = ${f.status}` : sql``}
        ${exact ? sql`and u.id = ${this.byAddress(exact)}` : sql``}
        ${f.role_id ? sql`and exists (select 1 from user_roles ur where ur.tenant_id = ${this.tenantId} and ur.user_id = u.id and ur.role_id = ${f.role_id})` : sql``}
      order by u.created_at desc, u.id desc limit ${limit}`;
    if (!scan) return this.hydrate(await batch(f.cursor, f.limit + 1));
    const prefix = f.email?.toLowerCase();
    const needle = f.q?.toLowerCase();
    const keep = (u: User) => (!prefix || u.email.toLowerCase().startsWith(prefix))
      && (!needle || u.email.toLowerCase().includes(needle) || (u.name ?? '').toLowerCase().includes(needle));
    const out: User[] = [];
    let cursor = f.cursor;
    for (;;) {
      const rows = await batch(cursor, SCAN_BATCH);
      for (const u of await this.hydrate(rows)) { if (keep(u)) out.push(u); if (out.length > f.limit) return out; }
      if (rows.length < SCAN_BATCH) return out;
      const last = rows[rows.length - 1]!;
      cursor = { createdAt: Number(last.created_at), id: last.id };
    }
  }

  /** Applies the given fields; null when the user does not exist, 'email_taken' on a duplicate email. */
  async update(id: string, p: UserPatch): Promise<User | null | 'email_taken'> {
    const cur = await this.lock(id);
    if (!cur) return null;
    const rec: PiiRecord = { email: p.email ?? cur.email, name: p.name !== undefined ? p.name : cur.name, metadata: p.metadata ?? cur.metadata };
    const readdress = p.email !== undefined && normalizeEmail(p.email) !== normalizeEmail(cur.email);
    if (readdress && !(await this.reindex(id, rec.email))) return 'email_taken';
    const sealed = await this.vault.seal(this.tenantId, id, rec);
    const [row] = await this.db<CoreRow[]>`update users set email_verified = ${p.email_verified ?? cur.email_verified}, updated_at = now_ms()
      where tenant_id = ${this.tenantId} and id = ${id} returning ${this.db.unsafe(core('users'))}, null::bytea as sealed`;
    if (!row) return null;
    await this.writePii(row.pii_partition, id, sealed);
    const { sealed: _s, ...c } = row;
    return userOf(c, rec);
  }

  /** Replaces a user's index entries with those of a new address; false when the address is taken. */
  private async reindex(id: string, email: string): Promise<boolean> {
    const w = this.vault.writeEntries(email);
    const r = this.vault.readEntries(email);
    const step = async (db: Db) => {
      const [taken] = await db`select 1 from user_email_index where tenant_id = ${this.tenantId} and generation = any(${r.generations}::int[]) and bidx = any(${byteaArray(this.db, r.bidxs)}::bytea[]) and user_id <> ${id} limit 1`;
      if (taken) return false;
      await db`delete from user_email_index where tenant_id = ${this.tenantId} and user_id = ${id}`;
      await db`insert into user_email_index (tenant_id, generation, bidx, user_id) select ${this.tenantId}, g, b, ${id} from unnest(${w.generations}::int[], ${byteaArray(this.db, w.bidxs)}::bytea[]) as x(g, b)`;
      return true;
    };
    try {
      // All or nothing: a user must never be left without entries (a savepoint inside the caller's transaction).
      return 'savepoint' in this.db ? await (this.db as TxSql).savepoint(step) : await this.db.begin(step) as boolean;
    } catch (err) { if (unique(err)) return false; throw err; }
  }

  /** Writes a user's sealed PII in its partition (an upsert: the row exists unless a move is mid-way). */
  async writePii(partition: string, id: string, sealed: Buffer): Promise<void> {
    const part = this.vault.partition(partition);
    const write = (s: Db) => s`insert into ${s(part.table)} (tenant_id, user_id, sealed) values (${this.tenantId}, ${id}, ${sealed})
      on conflict (tenant_id, user_id) do update set sealed = excluded.sealed, updated_at = excluded.updated_at`;
    if (part.inMain) await write(this.db);
    else await this.vault.onPartition(part, write);
  }

  /** Updates core columns of the matching user and returns it with its PII (one statement for main-database partitions). */
  private async updateReturning(set: Fragment, where: Fragment): Promise<User | null> {
    const j = this.vault.joinSql('x');
    return this.one(await this.db<CoreRow[]>`with x as (update users set ${set}, updated_at = now_ms() where tenant_id = ${this.tenantId} and ${where} returning *)
      select ${this.db.unsafe(`${core('x')}, ${j.column}`)} from x ${this.db.unsafe(j.joins)}`);
  }

  async setStatus(id: string, status: UserStatus): Promise<User | null> {
    return this.updateReturning(this.db`status = ${status}`, this.db`id = ${id}`);
  }

  async delete(id: string): Promise<User | null> {
    const before = await this.get(id);
    if (!before) return null;
    // Rows in main-database partitions and index entries go with the core row (foreign keys); others explicitly.
    const [row] = await this.db<{ id: string }[]>`delete from users where tenant_id = ${this.tenantId} and id = ${id} returning id`;
    if (!row) return null;
    const part = this.vault.partition(before.pii_partition);
    if (!part.inMain) await this.removeElsewhere([{ id, partition: part.name }]);
    return before;
  }

  /** Ends every refresh token family of a user (suspension, deletion); access tokens are cut by a revocation mark. */
  async revokeRefreshTokens(userId: string): Promise<number> {
    const r = await this.db`update refresh_tokens set status = 'revoked' where tenant_id = ${this.tenantId} and sub = ${userId} and status = 'active'`;
    return r.count;
  }

  /**
   * A login of an active user: stamps last_login_at (the code proved the address, so it is verified)
   * and returns the row with its PII in one statement; null if no active user has that address.
   */
  async touchActiveLogin(email: string): Promise<User | null> {
    // A successful sign-in ends a run of failures (the lockout counts consecutive ones). The login hot path:
    // one prepared statement whose text is built once per process (nested fragments cost ~0.2 ms of CPU).
    const e = this.vault.readEntries(email);
    const text = this.vault.statement(`touch-login:${e.generations.length}`, (j) => `with x as (update users set last_login_at = now_ms(), email_verified = true,
        failed_logins = 0, updated_at = now_ms()
      where tenant_id = $1 and status = 'active' and id = (select user_id from user_email_index
        where tenant_id = $1 and (${entryPredicate(2, e.generations.length)}) limit 1) returning *)
      select ${core('x')}, ${j('x').column} from x ${j('x').joins}`);
    return this.one(await this.db.unsafe<CoreRow[]>(text, [this.tenantId, ...entryParams(e)] as never[], { prepare: true }));
  }

  /**
   * Counts a failed sign-in of the user with this address and locks an active user when the tenant's
   * threshold is reached; `locked` is true only for the failure that locked it. Null: no such user.
   */
  async registerFailedLogin(email: string): Promise<{ user: User; locked: boolean } | null> {
    const j = this.vault.joinSql('x');
    const [row] = await this.db<(CoreRow & { just_locked: boolean })[]>`
      with s as (select coalesce((select max_failed_logins from tenant_login_lockout where tenant_id = ${this.tenantId}), 0) as max),
      cur as (select id, status as was from users where tenant_id = ${this.tenantId} and id = ${this.byAddress(email)} for update),
      x as (update users u set failed_logins = u.failed_logins + 1,
        status = case when s.max > 0 and u.failed_logins + 1 >= s.max and u.status = 'active' then 'locked' else u.status end,
        updated_at = now_ms()
      from s, cur where u.tenant_id = ${this.tenantId} and u.id = cur.id
      returning u.*, (cur.was = 'active' and u.status = 'locked') as just_locked)
      select ${this.db.unsafe(`${core('x')}, x.just_locked, ${j.column}`)} from x ${this.db.unsafe(j.joins)}`;
    if (!row) return null;
    const { just_locked, ...rest } = row;
    const user = await this.one([rest]);
    return user ? { user, locked: just_locked } : null;
  }

  /** Sets a user's status for lock/unlock; unlocking also clears the failure count. */
  async setLockStatus(id: string, status: 'locked' | 'active'): Promise<User | null> {
    return this.updateReturning(this.db`status = ${status}, failed_logins = 0`, this.db`id = ${id}`);
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
