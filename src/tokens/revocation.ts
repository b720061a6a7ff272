import type { Context } from '@opentelemetry/api';
import { statusIdxOf } from './status-list.js';
import { logIdsOf } from '../tracing/tracer.js';
import { redisUnder, sqlUnder } from '../tracing/under.js';
import type { ChainableCommander, Redis } from 'ioredis';
import { ServiceUnavailable } from '../errors.js';
import type { Logger } from '../log.js';
import type { Sql } from '../sql.js';
import { liveMarks, revokedAfter } from '../cross-tenant/revocations.js';
import { redisKeys } from '../store/redis-keys.js';
import { mgetAcrossSlots, setMany } from '../store/redis.js';
import { listRefusedTenants } from '../store/tenants.js';
import { parseJti } from './jti.js';
import { RevocationSentinels } from './revocation-sentinels.js';

/**
 * Not-before marks: everything of a user, of a client, or of one user at one client (a withdrawn
 * consent); `login` marks a user's sign-ins (login sessions and what they approved), not their tokens.
 */
export type MarkKind = 'sub' | 'client' | 'grant' | 'login';

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

/** What a revocation check found: the token's own state, its tenant's, and the extra keys read alongside (null when nothing was read; an entry is undefined when its cluster node could not be read). */
export interface RevocationState { revoked: boolean; tenantRefused: boolean; extras: Array<string | null | undefined> | null }

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

/** A revocation is stored (Postgres, its Redis master) but no replica acknowledged it in time: not acknowledged, repeat it. */
export class RevocationNotReplicated extends ServiceUnavailable {
  constructor() { super('The revocation is stored but not yet replicated; repeat the request.', 1); }
}

const NO_ANCESTORS: readonly Ancestor[] = [];
const REFILL_LOCK = redisKeys.revocationRefillLock;

/** How revocation writes are made durable in Redis beyond its master (issue 29 item 15). */
export interface ReplicationOptions {
  /** Replicas that must acknowledge a revocation write (Redis WAIT) before it is acknowledged; 0: none. */
  acks: number;
  /** How long one WAIT may hold the answer (ms). */
  waitMs: number;
  /** How long a write no replica acknowledged (or that failed) is written again in the background (ms). */
  retryMs: number;
}

const NO_REPLICATION: ReplicationOptions = { acks: 0, waitMs: 0, retryMs: 30_000 };

/** Writes one revocation key: a SET (or its read-modify-write) queued on a pipeline. */
type Write = (p: ChainableCommander) => void;

/**
 * Sharded revocation. Redis is the fast path: one key per revoked jti under its shard's hash tag,
 * expiring when the token would have, plus not-before marks per user and per client. Postgres is the
 * record: every revocation is written there first, and a Redis that lost its data (no sentinel key) is
 * refilled from Postgres before any answer relies on it. Every failure to read fails closed.
 *
 * On a Redis Cluster the sentinel is per slot (src/tokens/revocation-sentinels.ts), and a revocation is
 * acknowledged once a replica of its master has it too (WAIT), so a failover neither refuses every
 * tenant's tokens nor brings a revoked one back.
 */
export class RevocationStore {
  private refilling: Promise<void> | undefined;
  /** Sentinels of slots whose revocation reached Postgres but not Redis: dropped (forcing a refill) as soon as Redis answers. */
  private readonly dirty = new Set<string>();
  private readonly sentinels: RevocationSentinels;
  /** Keys being written again in the background, with the newest write of each. */
  private readonly retrying = new Map<string, Write>();

  constructor(private readonly redis: Redis, private readonly sql: Sql, private readonly log: Logger, private readonly replication: ReplicationOptions = NO_REPLICATION) {
    this.sentinels = new RevocationSentinels(redis);
    // On every (re)connection, not only after a missed write: a Redis that came back empty must be
    // refilled before the first token arrives, not by the first request that finds it empty.
    redis.on('ready', () => {
      this.forgetDirty().then(() => this.ensureLoaded())
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
   * calling client's failure budget), so a request costs one MGET. Keys are hash-tagged per shard and
   * tenant; on Redis Cluster the MGET is split by slot (jti shard, tenant marks, cache entry, failure
   * budget, plus one per ancestor's shard, each slot's sentinel with its keys) and the parts are sent at
   * once: still one round trip, to each node holding one of them in parallel.
   *
   * A token minted by an exchange names its ancestors (`lineage`): it is revoked when any of them is, by
   * its own id or by a mark on the client it was issued to (the user's own marks are the token's: an
   * exchange keeps `sub`). Comparing those marks with this token's iat is enough: a token exchanged
   * after the mark could not have been, since the exchange checked the same ancestors.
   */
  async lookup(t: RevocationSubject, extraKeys: readonly string[] = [], trace?: Context): Promise<RevocationState> {
    const key = RevocationStore.jtiKey(t.jti);
    if (!key) return { revoked: true, tenantRefused: false, extras: null }; // not one of our identifiers: never treat as live
    const lineage = t.lineage ?? NO_ANCESTORS;
    const sub = t.sub ?? '';
    const tenantMark = redisKeys.tenantSuspended(t.tenant);
    // [own jti, sub mark, client mark, grant mark, tenant mark, per ancestor (jti, client mark, grant mark), sentinels..., extras...]
    const keys = [key, RevocationStore.markKey(t.tenant, 'sub', sub), RevocationStore.markKey(t.tenant, 'client', t.client_id ?? ''),
      RevocationStore.markKey(t.tenant, 'grant', grantMarkId(sub, t.client_id ?? '')),
      // The tenant's suspension mark rides in the same command (same `{t:<tenant>}` slot as the marks): no extra round trip.
      tenantMark];
    const guarded = [this.sentinels.of(key), this.sentinels.of(tenantMark)];
    for (const a of lineage) {
      const ancestorKey = RevocationStore.jtiKey(a.jti);
      if (!ancestorKey) return { revoked: true, tenantRefused: false, extras: null };
      keys.push(ancestorKey, RevocationStore.markKey(t.tenant, 'client', a.client_id), RevocationStore.markKey(t.tenant, 'grant', grantMarkId(sub, a.client_id)));
      guarded.push(this.sentinels.of(ancestorKey));
    }
    const own = keys.length;
    for (const sentinel of guarded) if (!keys.includes(sentinel, own)) keys.push(sentinel);
    const required = keys.length;
    for (const k of extraKeys) keys.push(k);
    let v: (string | null | undefined)[];
    try {
      v = await mgetAcrossSlots(redisUnder(this.redis, trace), keys, required);
    } catch (err) {
      throw new RevocationUnavailable(err);
    }
    for (let i = own; i < required; i++) {
      if (v[i] === null || v[i] === undefined) {
        void this.ensureLoaded(keys[i]).catch((err) => this.log.error({ err, ...logIdsOf(trace) }, 'revocation refill failed'));
        throw new RevocationUnavailable();
      }
    }
    const extras = extraKeys.length ? v.slice(required) : [];
    // A suspension is not a revocation: the token stays valid underneath and is served again on unsuspend.
    const tenantRefused = v[4] !== null && v[4] !== undefined;
    // Tokens issued in the same second as a mark are revoked too: iat has one-second precision.
    const iatMs = (t.iat ?? 0) * 1000;
    for (let i = 0; i < own; i++) {
      const x = v[i];
      if (x === null || x === undefined || i === 4) continue;
      // Revoked ids (the token's own at 0, each ancestor's at 5 + 3k) hold "1"; marks hold their not-before.
      if (i === 0 || (i >= 5 && (i - 5) % 3 === 0) || iatMs <= Number(x)) return { revoked: true, tenantRefused, extras };
    }
    return { revoked: false, tenantRefused, extras };
  }

  /**
   * Revokes one token id until expSeconds (its exp claim). Durable first, then fast. `trace`: a sampled
   * request's context, under which the writes make their spans (as lookup's read does).
   */
  async revoke(tenant: string, jti: string, expSeconds: number, trace?: Context): Promise<void> {
    const key = RevocationStore.jtiKey(jti);
    if (!key) return;
    const expMs = expSeconds * 1000;
    const sql = sqlUnder(this.sql, trace);
    // A token's status-list index (src/tokens/status-list.ts) is kept with its revocation: lists are built from here.
    await sql`insert into revocations (jti, tenant_id, expires_at, status_idx) values (${jti}, ${tenant}, ${expMs}, ${statusIdxOf(jti) ?? null}) on conflict (jti) do nothing`;
    if (expMs - Date.now() > 0) await this.writeRedis(key, (p) => { p.set(key, '1', 'PX', Math.max(1, expMs - Date.now())); }, trace);
  }

  /** Revokes everything issued to a user (sub) or a client before atMs, for as long as such tokens can live. */
  async revokeBefore(tenant: string, kind: MarkKind, id: string, atMs: number, maxTtlSeconds: number, trace?: Context): Promise<void> {
    const expiresAt = atMs + maxTtlSeconds * 1000;
    const sql = sqlUnder(this.sql, trace);
    await sql`insert into revocation_marks (tenant_id, subject_kind, subject_id, not_before, expires_at)
                   values (${tenant}, ${kind}, ${id}, ${atMs}, ${expiresAt})
                   on conflict (tenant_id, subject_kind, subject_id) do update
                   set not_before = greatest(revocation_marks.not_before, excluded.not_before), expires_at = greatest(revocation_marks.expires_at, excluded.expires_at)`;
    const key = RevocationStore.markKey(tenant, kind, id);
    // Never lowers a later mark: the script keeps the greater not-before (and is what a retry runs again).
    await this.writeRedis(key, (p) => { p.eval(RAISE_MARK, 1, key, String(atMs), String(Math.max(1, expiresAt - Date.now()))); }, trace);
  }

  /**
   * Whether the tenant is suspended, being deleted or deleted (its mark is present). Fails closed like
   * the token check: no answer before the state is loaded. For the login flow, which has no token yet.
   */
  async tenantRefused(tenant: string, trace?: Context): Promise<boolean> {
    return (await this.guardedGet(redisKeys.tenantSuspended(tenant), trace)) !== null;
  }

  /**
   * Whether a sign-in of the user at authTime (epoch seconds) was ended since: the user was locked,
   * suspended or deleted at or after it (the `login` mark). Fails closed like tenantRefused. Same-second
   * sign-ins count as ended, as tokens do: authTime has one-second precision.
   */
  async signInEnded(tenant: string, userId: string, authTime: number, trace?: Context): Promise<boolean> {
    const mark = await this.guardedGet(RevocationStore.markKey(tenant, 'login', userId), trace);
    return mark !== null && authTime * 1000 <= Number(mark);
  }

  /** One key of the revocation state, read with its slot's sentinel: null when absent; throws before the state is loaded. */
  private async guardedGet(key: string, trace: Context | undefined): Promise<string | null> {
    const sentinel = this.sentinels.of(key);
    let v: (string | null | undefined)[];
    try { v = await mgetAcrossSlots(redisUnder(this.redis, trace), [key, sentinel]); } catch (err) { throw new RevocationUnavailable(err); }
    if (v[1] === null || v[1] === undefined) {
      void this.ensureLoaded(sentinel).catch((err) => this.log.error({ err, ...logIdsOf(trace) }, 'revocation refill failed'));
      throw new RevocationUnavailable();
    }
    return v[0] ?? null;
  }

  /**
   * Sets (a status other than active) or clears (active) the tenant's suspension mark. Postgres
   * (tenants.status) is already written by the caller; a Redis failure forces a refill from it.
   */
  async markTenant(tenant: string, status: string, trace?: Context): Promise<void> {
    const key = redisKeys.tenantSuspended(tenant);
    await this.writeRedis(key, (p) => { if (status === 'active') p.del(key); else p.set(key, status); }, trace);
  }

  /**
   * Whether Redis holds the revocation record, so checks can answer (readiness). When it does not, a
   * refill is started (another process may hold the lock; the next probe tries again).
   */
  async loaded(): Promise<boolean> {
    if (await this.present(this.sentinels.probe())) return true;
    void this.ensureLoaded().catch((err) => this.log.error({ err }, 'revocation refill failed'));
    return false;
  }

  /**
   * Refills Redis from Postgres if it lost its data (the given sentinel, or a probe of every master, is
   * missing); one process refills while the others wait.
   */
  ensureLoaded(missing?: string): Promise<void> {
    return (this.refilling ??= this.refill(missing).finally(() => { this.refilling = undefined; }));
  }

  private async present(sentinels: string[]): Promise<boolean> {
    const v = await mgetAcrossSlots(this.redis, sentinels);
    return v.every((x) => x !== null && x !== undefined);
  }

  private async refill(missing: string | undefined): Promise<void> {
    if (await this.present(missing === undefined ? this.sentinels.probe() : [missing])) return;
    const got = await this.redis.set(REFILL_LOCK, String(process.pid), 'PX', 60_000, 'NX');
    if (got !== 'OK') return; // another process is refilling; checks keep failing closed until it is done
    try {
      const now = Date.now();
      let count = 0;
      let after = '';
      for (;;) {
        const rows = await revokedAfter(this.sql, now, after);
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
      const marks = await liveMarks<MarkKind>(this.sql, now);
      const refused = await listRefusedTenants(this.sql);
      await setMany(this.redis, [
        ...marks.map((m) => ({ key: RevocationStore.markKey(m.tenant_id, m.subject_kind, m.subject_id), value: String(m.not_before), ttlMs: Math.max(1, m.expires_at - now) })),
        ...refused.map((r) => ({ key: redisKeys.tenantSuspended(r.id), value: r.status })),
      ]);
      // Last, and only once everything above is written: checks answer from here on.
      await setMany(this.redis, this.sentinels.all().map((key) => ({ key, value: String(now) })));
      this.log.info({ revocations: count, marks: marks.length, refusedTenants: refused.length }, 'revocation state loaded into redis');
    } finally {
      await this.redis.del(REFILL_LOCK).catch(() => {});
    }
  }

  /**
   * Writes a revocation key (Postgres already holds it) and, when replicas are asked for, waits until
   * that many acknowledge it (WAIT on the same connection, so on the key's own master): an acknowledged
   * revocation survives a failover of that master. One no replica acknowledged in time (a lagging or
   * partitioned replica, or a master left without one) is answered 503, never acknowledged, and written
   * again in the background until a replica has it or retryMs passes, so a failover in that window
   * still ends with the key on the promoted replica soon after. A write that failed is answered 503
   * too, its slot's sentinel is dropped so the slot is refilled from Postgres, and it is retried.
   */
  private async writeRedis(key: string, write: Write, trace?: Context): Promise<void> {
    let acked: number;
    try {
      acked = await this.writeOnce(write, trace);
    } catch (err) {
      this.log.warn({ err: (err as Error).message, ...logIdsOf(trace) }, 'revocation written to postgres but not redis; forcing refill');
      this.dirty.add(this.sentinels.of(key));
      void this.forgetDirty().catch(() => {});
      this.retry(key, write);
      throw new RevocationUnavailable(err);
    }
    if (acked < this.replication.acks) {
      // Acknowledging it now would let a failover of this master lose it (the replica promoted without it).
      this.log.warn({ acked, wanted: this.replication.acks, ...logIdsOf(trace) }, 'revocation not acknowledged by a replica in time; answering 503 and writing it again until one has it');
      this.retry(key, write);
      throw new RevocationNotReplicated();
    }
  }

  /** One write (with its WAIT): the number of replicas that acknowledged it. */
  private async writeOnce(write: Write, trace?: Context): Promise<number> {
    const p = redisUnder(this.redis, trace).pipeline();
    write(p);
    const { acks, waitMs } = this.replication;
    if (acks > 0) p.wait(acks, waitMs);
    const res = (await p.exec()) ?? [];
    for (const [err] of res) if (err) throw err;
    return acks > 0 ? Number(res[res.length - 1]![1]) : 0;
  }

  /** Writes a key again every 500 ms until a replica acknowledges it (or the window closes: then its slot refills). */
  private retry(key: string, write: Write): void {
    const running = this.retrying.has(key);
    this.retrying.set(key, write);
    if (running) return;
    const until = Date.now() + this.replication.retryMs;
    const step = async () => {
      const latest = this.retrying.get(key)!;
      try {
        if ((await this.writeOnce(latest)) >= this.replication.acks) { this.retrying.delete(key); return; }
      } catch { /* not written: try again */ }
      if (Date.now() >= until) {
        this.retrying.delete(key);
        this.dirty.add(this.sentinels.of(key));
        void this.forgetDirty().catch(() => {});
        return;
      }
      setTimeout(() => void step(), 500).unref();
    };
    setTimeout(() => void step(), 500).unref();
  }

  /** Drops the sentinels of slots that missed a write, so the next check refills them from Postgres. */
  private async forgetDirty(): Promise<void> {
    for (const s of [...this.dirty]) {
      await this.redis.del(s);
      this.dirty.delete(s);
    }
  }
}

/** Sets a mark to the greater of its value and ARGV[1], with TTL ARGV[2] ms. */
const RAISE_MARK = `local v = tonumber(redis.call('GET', KEYS[1]) or '0')
local n = tonumber(ARGV[1])
if n > v then v = n end
redis.call('SET', KEYS[1], tostring(v), 'PX', ARGV[2])
return 1`;
