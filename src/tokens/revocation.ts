import type { Redis } from 'ioredis';
import { ServiceUnavailable } from '../errors.js';
import type { Logger } from '../log.js';
import type { Sql } from '../store/sql.js';
import { redisKeys } from '../store/redis-keys.js';
import { mgetAcrossSlots, setMany } from '../store/redis.js';
import { listRefusedTenants } from '../store/tenants.js';
import { parseJti } from './jti.js';

/** Not-before marks: everything of a user, of a client, or of one user at one client (a withdrawn consent). */
export type MarkKind = 'sub' | 'client' | 'grant';

/** The id of a `grant` mark: one user at one client. */
export function grantMarkId(sub: string, clientId: string): string { return `${sub} ${clientId}`; }

/** A token a presented token was exchanged from: its id and the client it was issued to (the `lineage` claim). */
export interface Ancestor { jti: string; client_id: string }

/**
 * At most this many ancestors ride in a token's `lineage` (the exchange refuses to go deeper): each adds
 * three keys to the revocation MGET, so the chain bounds the one read every presentation costs.
 */
export const MAX_LINEAGE = 4;

/** What the revocation check needs to know about a token. */
export interface RevocationSubject { jti: string; tenant: string; sub?: string; client_id?: string; iat?: number; lineage?: readonly Ancestor[] }

/** What a revocation check found: the token's own state, its tenant's, and the extra keys read alongside (null when nothing was read). */
export interface RevocationState { revoked: boolean; tenantRefused: boolean; extras: Array<string | null> | null }

/** The revocation check's view of a token's claims. */
export function revocationSubject(p: { jti?: unknown; tenant?: unknown; sub?: string; client_id?: string; iat?: number; lineage?: unknown }, tenant = String(p.tenant ?? '')): RevocationSubject {
  const out: RevocationSubject = { jti: String(p.jti ?? ''), tenant, sub: p.sub, client_id: p.client_id, iat: p.iat };
  if (p.lineage !== undefined) out.lineage = lineageOf(p.lineage);
  return out;
}

/**
 * A token's ancestors from its `lineage` claim. Only our own exchange writes it (and signs it); a claim
 * that is not a short list of {jti, client_id} is answered as an ancestor that cannot be found, which the
 * check reads as revoked, never as no lineage at all.
 */
export function lineageOf(claim: unknown): Ancestor[] {
  if (!Array.isArray(claim) || claim.length > MAX_LINEAGE) return [UNREADABLE];
  return claim.map((a) => (a !== null && typeof a === 'object' && typeof a.jti === 'string' && typeof a.client_id === 'string' ? { jti: a.jti, client_id: a.client_id } : UNREADABLE));
}

const UNREADABLE: Ancestor = { jti: '', client_id: '' };

export class RevocationUnavailable extends ServiceUnavailable {
  constructor(cause?: unknown) { super('Revocation state cannot be read; no token is accepted until it can.', 1, cause); }
}

const SENTINEL = redisKeys.revocationLoaded;
const NO_ANCESTORS: readonly Ancestor[] = [];
const REFILL_LOCK = redisKeys.revocationRefillLock;

/**
 * Sharded revocation. Redis is the fast path: one key per revoked jti under its shard's hash tag,
 * expiring when the token would have, plus not-before marks per user and per client. Postgres is the
 * record: every revocation is written there first, and a Redis that lost its data (no sentinel key) is
 * refilled from Postgres before any answer relies on it. Every failure to read fails closed.
 */
export class RevocationStore {
  private refilling: Promise<void> | undefined;
  /** A revocation reached Postgres but not Redis: force a refill as soon as Redis is back. */
  private dirty = false;

  constructor(private readonly redis: Redis, private readonly sql: Sql, private readonly log: Logger) {
    // On every (re)connection, not only after a missed write: a Redis that came back empty must be
    // refilled before the first token arrives, not by the first request that finds it empty.
    redis.on('ready', () => {
      const forget = this.dirty ? redis.del(SENTINEL).then(() => { this.dirty = false; }) : Promise.resolve();
      forget.then(() => this.ensureLoaded())
        .catch((err) => log.error({ err }, 'revocation refill after reconnect failed'));
    });
  }

  static jtiKey(jti: string): string | null {
    const j = parseJti(jti);
    return j ? redisKeys.revokedJti(j, jti) : null;
  }
  static markKey(tenant: string, kind: MarkKind, id: string): string {
    return redisKeys.revocationMark(tenant, kind, id);
  }

  /**
   * True when revoked or when the token's tenant is suspended (or being deleted); throws
   * RevocationUnavailable when Redis cannot answer or has not been refilled.
   */
  async isRevoked(t: RevocationSubject): Promise<boolean> {
    const r = await this.lookup(t);
    return r.revoked || r.tenantRefused;
  }

  /**
   * The revocation check, plus the caller's keys read in the same command (the introspection cache, the
   * calling client's failure budget), so a request costs one MGET. Keys are hash-tagged per shard and tenant; on Redis Cluster the MGET is split
   * by hash tag (sentinel, jti shard, tenant marks, cache entry: at most four, plus one per ancestor's
   * shard) and the parts are sent at once: still one round trip, to each node holding one of them in parallel.
   *
   * A token minted by an exchange names its ancestors (`lineage`): it is revoked when any of them is, by
   * its own id or by a mark on the client it was issued to (the user's own marks are the token's: an
   * exchange keeps `sub`). Comparing those marks with this token's iat is enough: a token exchanged
   * after the mark could not have been, since the exchange checked the same ancestors.
   */
  async lookup(t: RevocationSubject, extraKeys: readonly string[] = []): Promise<RevocationState> {
    const key = RevocationStore.jtiKey(t.jti);
    if (!key) return { revoked: true, tenantRefused: false, extras: null }; // not one of our identifiers: never treat as live
    const lineage = t.lineage ?? NO_ANCESTORS;
    const sub = t.sub ?? '';
    let v: (string | null)[];
    try {
      const keys = [SENTINEL, key, RevocationStore.markKey(t.tenant, 'sub', sub), RevocationStore.markKey(t.tenant, 'client', t.client_id ?? ''),
        RevocationStore.markKey(t.tenant, 'grant', grantMarkId(sub, t.client_id ?? '')),
        // The tenant's suspension mark rides in the same command (same `{t:<tenant>}` slot as the marks): no extra round trip.
        redisKeys.tenantSuspended(t.tenant)];
      for (const a of lineage) {
        const ancestorKey = RevocationStore.jtiKey(a.jti);
        if (!ancestorKey) return { revoked: true, tenantRefused: false, extras: null };
        keys.push(ancestorKey, RevocationStore.markKey(t.tenant, 'client', a.client_id), RevocationStore.markKey(t.tenant, 'grant', grantMarkId(sub, a.client_id)));
      }
      for (const k of extraKeys) keys.push(k);
      v = await mgetAcrossSlots(this.redis, keys);
    } catch (err) {
      throw new RevocationUnavailable(err);
    }
    if (v[0] === null) {
      void this.ensureLoaded().catch((err) => this.log.error({ err }, 'revocation refill failed'));
      throw new RevocationUnavailable();
    }
    const own = 6 + 3 * lineage.length;
    const extras = extraKeys.length ? v.slice(own).map((x) => x ?? null) : [];
    // A suspension is not a revocation: the token stays valid underneath and is served again on unsuspend.
    const tenantRefused = v[5] !== null && v[5] !== undefined;
    // Tokens issued in the same second as a mark are revoked too: iat has one-second precision.
    const iatMs = (t.iat ?? 0) * 1000;
    for (let i = 1; i < own; i++) {
      const x = v[i];
      if (x === null || x === undefined || i === 5) continue;
      // Revoked ids (the token's own at 1, each ancestor's at 6 + 3k) hold "1"; marks hold their not-before.
      if (i === 1 || (i >= 6 && (i - 6) % 3 === 0) || iatMs <= Number(x)) return { revoked: true, tenantRefused, extras };
    }
    return { revoked: false, tenantRefused, extras };
  }

  /** Revokes one token id until expSeconds (its exp claim). Durable first, then fast. */
  async revoke(tenant: string, jti: string, expSeconds: number): Promise<void> {
    const key = RevocationStore.jtiKey(jti);
    if (!key) return;
    const expMs = expSeconds * 1000;
    await this.sql`insert into revocations (jti, tenant_id, expires_at) values (${jti}, ${tenant}, ${expMs}) on conflict (jti) do nothing`;
    const ttl = expMs - Date.now();
    if (ttl > 0) await this.writeRedis(() => this.redis.set(key, '1', 'PX', ttl));
  }

  /** Revokes everything issued to a user (sub) or a client before atMs, for as long as such tokens can live. */
  async revokeBefore(tenant: string, kind: MarkKind, id: string, atMs: number, maxTtlSeconds: number): Promise<void> {
    const expiresAt = atMs + maxTtlSeconds * 1000;
    await this.sql`insert into revocation_marks (tenant_id, subject_kind, subject_id, not_before, expires_at)
                   values (${tenant}, ${kind}, ${id}, ${atMs}, ${expiresAt})
                   on conflict (tenant_id, subject_kind, subject_id) do update
                   set not_before = greatest(revocation_marks.not_before, excluded.not_before), expires_at = greatest(revocation_marks.expires_at, excluded.expires_at)`;
    const key = RevocationStore.markKey(tenant, kind, id);
    await this.writeRedis(async () => {
      const prev = Number((await this.redis.get(key)) ?? 0);
      await this.redis.set(key, String(Math.max(prev, atMs)), 'PX', Math.max(1, expiresAt - Date.now()));
    });
  }

  /**
   * Whether the tenant is suspended, being deleted or deleted (its mark is present). Fails closed like
   * the token check: no answer before the state is loaded. For the login flow, which has no token yet.
   */
  async tenantRefused(tenant: string): Promise<boolean> {
    let v: (string | null)[];
    try { v = await mgetAcrossSlots(this.redis, [SENTINEL, redisKeys.tenantSuspended(tenant)]); } catch (err) { throw new RevocationUnavailable(err); }
    if (v[0] === null) {
      void this.ensureLoaded().catch((err) => this.log.error({ err }, 'revocation refill failed'));
      throw new RevocationUnavailable();
    }
    return v[1] !== null;
  }

  /**
   * Sets (a status other than active) or clears (active) the tenant's suspension mark. Postgres
   * (tenants.status) is already written by the caller; a Redis failure forces a refill from it.
   */
  async markTenant(tenant: string, status: string): Promise<void> {
    const key = redisKeys.tenantSuspended(tenant);
    await this.writeRedis(() => (status === 'active' ? this.redis.del(key) : this.redis.set(key, status)));
  }

  /**
   * Whether Redis holds the revocation record, so checks can answer (readiness). When it does not, a
   * refill is started (another process may hold the lock; the next probe tries again).
   */
  async loaded(): Promise<boolean> {
    if ((await this.redis.get(SENTINEL)) !== null) return true;
    void this.ensureLoaded().catch((err) => this.log.error({ err }, 'revocation refill failed'));
    return false;
  }

  /** Refills Redis from Postgres if it lost its data; one process refills while the others wait. */
  ensureLoaded(): Promise<void> {
    return (this.refilling ??= this.refill().finally(() => { this.refilling = undefined; }));
  }

  private async refill(): Promise<void> {
    if ((await this.redis.get(SENTINEL)) !== null) return;
    const got = await this.redis.set(REFILL_LOCK, String(process.pid), 'PX', 60_000, 'NX');
    if (got !== 'OK') return; // another process is refilling; checks keep failing closed until it is done
    try {
      const now = Date.now();
      let count = 0;
      let after = '';
      for (;;) {
        const rows = await this.sql<{ jti: string; expires_at: number }[]>`
          select jti, expires_at from revocations where expires_at > ${now} and jti > ${after} order by jti limit 5000`;
        if (!rows.length) break;
        const entries: Array<{ key: string; value: string; ttlMs: number }> = [];
        for (const r of rows) {
          const key = RevocationStore.jtiKey(r.jti);
          if (key) entries.push({ key, value: '1', ttlMs: Math.max(1, r.expires_at - now) });
        }
        await setMany(this.redis, entries);
        count += rows.length;
        after = rows[rows.length - 1]!.jti;
      }
      const marks = await this.sql<{ tenant_id: string; subject_kind: MarkKind; subject_id: string; not_before: number; expires_at: number }[]>`
        select tenant_id, subject_kind, subject_id, not_before, expires_at from revocation_marks where expires_at > ${now}`;
      const refused = await listRefusedTenants(this.sql);
      await setMany(this.redis, [
        ...marks.map((m) => ({ key: RevocationStore.markKey(m.tenant_id, m.subject_kind, m.subject_id), value: String(m.not_before), ttlMs: Math.max(1, m.expires_at - now) })),
        ...refused.map((r) => ({ key: redisKeys.tenantSuspended(r.id), value: r.status })),
      ]);
      // Last, and only once everything above is written: checks answer from here on.
      await this.redis.set(SENTINEL, String(now));
       this.log.info({ revocations: count, marks: marks.length, refusedTenants: refused.length }, 'revocation state loaded into redis');
    } finally {
      await this.redis.del(REFILL_LOCK).catch(() => {});
    }
  }

  private async writeRedis(fn: () => Promise<unknown>): Promise<void> {
    // Postgres already holds the revocation; if Redis misses it, drop the sentinel so a refill restores it.
    try { await fn(); } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'revocation written to postgres but not redis; forcing refill');
      this.dirty = true;
      await this.redis.del(SENTINEL).then(() => { this.dirty = false; }, () => {});
      throw new RevocationUnavailable(err);
    }
  }
}
