import type { Redis } from 'ioredis';
import type { Logger } from '../../log.js';
import { blindIndex } from '../blind-index.js';
import type { LookupKey } from '../keyring.js';
import type { PiiVault } from '../vault.js';
import type { Sql, TxSql } from '../../sql.js';
import * as crossTenant from '../../cross-tenant/pii.js';
import { block, lagging, transition } from './controller.js';
import { loadKey } from './key-material.js';
import { lookupHmacRepo as repo, type RotationRow } from './repository.js';
import { afterVerification, hasJobWork } from './states.js';

/** A write under a lease that another owner has taken over since (or that lapsed): refused, nothing changed. */
export class StaleFencingToken extends Error {
  override readonly name = 'StaleFencingToken';
  constructor(readonly operationId: string, readonly token: number) { super(`fencing token ${token} of rotation ${operationId} is no longer current`); }
}

export interface WorkDeps {
  sql: Sql; vault: PiiVault; redis: Redis; kek: Buffer; log: Logger;
  /** This worker's identity as a lease owner. */
  ownerId: string;
  leaseMs: number; batch: number; liveMs: number;
  /** Queues the end of grace (a delayed job) when a verification passes. */
  scheduleGrace?: (operationId: string, delayMs: number) => Promise<void>;
  env?: NodeJS.ProcessEnv;
}

/** The checkpoint of the job's current phase (lookup_hmac_rotations.checkpoint, at most 4096 bytes). */
interface Checkpoint { phase: 'reindex' | 'verify' | 'rollback' | 'drop' | 'done'; cursor?: string | null; processed?: number; reindexed?: number; conflicts?: number; checked?: number; verified?: number; mismatches?: number; deleted?: number; generation?: number }

/**
 * Takes the rotation's lease: a new fencing token, unless a live owner other than `ownerId` holds it.
 * Null when it is held; the caller waits for it to lapse (a killed worker's lease lapses in leaseMs).
 */
export async function acquireLease(sql: Sql, operationId: string, ownerId: string, leaseMs: number): Promise<number | null> {
  const [r] = await sql<{ fencing_token: string }[]>`update lookup_hmac_rotations
    set owner_id = ${ownerId}, fencing_token = fencing_token + 1, lease_expires_at = now_ms() + ${leaseMs}, updated_at = now_ms()
    where operation_id = ${operationId} and finished_at is null
      and (owner_id is null or lease_expires_at is null or lease_expires_at < now_ms() or owner_id = ${ownerId})
    returning fencing_token`;
  return r ? Number(r.fencing_token) : null;
}

/**
 * One step of work under the lease: the rotation row is locked, the token checked (a stale one is
 * refused before anything is written), and the step's writes, its checkpoint and the renewed lease
 * commit together, so a resumed worker starts exactly after the last committed batch.
 */
export async function underLease<T>(d: WorkDeps, operationId: string, token: number, step: (tx: TxSql, row: RotationRow) => Promise<T>): Promise<T> {
  return d.sql.begin(async (tx) => {
    const row = await repo.get(tx, operationId, { lock: true });
    if (!row || row.finished_at !== null || row.fencing_token !== token || row.owner_id !== d.ownerId || (row.lease_expires_at ?? 0) < Date.now()) {
      throw new StaleFencingToken(operationId, token);
    }
    const out = await step(tx, row);
    // Renewed unless the step released it (a move to a state without work).
    await tx`update lookup_hmac_rotations set lease_expires_at = now_ms() + ${d.leaseMs}, updated_at = now_ms()
      where operation_id = ${operationId} and fencing_token = ${token} and owner_id is not null`;
    return out;
  }) as Promise<T>;
}

const keyCache = new Map<string, LookupKey>();
async function keyOf(d: WorkDeps, db: Sql | TxSql, generation: number): Promise<LookupKey> {
  const row = await repo.key(db, generation);
  if (!row) throw new Error(`lookup key generation ${generation} is unknown`);
  const id = `${generation}:${row.fingerprint}`;
  let k = keyCache.get(id);
  if (!k) { k = loadKey(row, d.kek, d.env); keyCache.set(id, k); }
  return k;
}

/** The index entries of users with an address under one key: tenant, user and blind index, column by column. */
function entriesOf(key: LookupKey, users: UserAddress[]): { tenants: string[]; users: string[]; bidxs: Buffer[] } {
  return { tenants: users.map((u) => u.tenant_id), users: users.map((u) => u.id), bidxs: users.map((u) => blindIndex(key.key, u.email!)) };
}

interface UserAddress { id: string; tenant_id: string; created_at: number; email: string | null }

/** The next `limit` users after `cursor` (by id), locked against changes of address, with their addresses opened. */
async function usersAfter(d: WorkDeps, tx: TxSql, cursor: string | null, limit: number, createdUpTo: number | null): Promise<{ users: UserAddress[]; last: string | null }> {
  const j = d.vault.joinSql('u');
  const rows = await crossTenant.usersAfter(tx, j, cursor, limit, createdUpTo);
  // Rows of partitions in other databases: one read per partition.
  const missing = rows.filter((r) => !r.sealed && !d.vault.partition(r.pii_partition).inMain);
  for (const name of new Set(missing.map((r) => r.pii_partition))) {
    const p = d.vault.partition(name);
    const rs = missing.filter((r) => r.pii_partition === name);
    const found = await d.vault.onPartition(p, (s) => s<{ tenant_id: string; user_id: string; sealed: Buffer }[]>`
      select tenant_id, user_id, sealed from ${s(p.table)} where user_id = any(${rs.map((r) => r.id)}::text[])`);
    const by = new Map(found.map((f) => [`${f.tenant_id} ${f.user_id}`, f.sealed]));
    for (const r of rs) r.sealed = by.get(`${r.tenant_id} ${r.id}`) ?? null;
  }
  const users = await Promise.all(rows.map(async (r) => {
    let email: string | null = null;
    // A user whose personal data cannot be read cannot be indexed: counted, never guessed.
    if (r.sealed) { try { email = (await d.vault.open(r.tenant_id, r.id, r.sealed)).email; } catch { email = null; } }
    return { id: r.id, tenant_id: r.tenant_id, created_at: Number(r.created_at), email };
  }));
  return { users, last: rows.length ? rows[rows.length - 1]!.id : null };
}

/**
 * Writes index entries under `key` for the next batch of users; entries that exist for the same user
 * are kept, an entry of another user under the same index is a conflict (counted; the verification
 * fails on it). Returns true when the last user has been done.
 */
export async function indexBatch(d: WorkDeps, operationId: string, token: number, target: 'candidate' | 'source'): Promise<boolean> {
  return underLease(d, operationId, token, async (tx, row) => {
    const cp = row.checkpoint as unknown as Checkpoint;
    const key = await keyOf(d, tx, target === 'candidate' ? row.candidate_generation : row.source_generation);
    const { users, last } = await usersAfter(d, tx, cp.cursor ?? null, d.batch, target === 'candidate' ? row.cutoff : null);
    const ok = users.filter((u) => u.email !== null);
    let conflicts = users.length - ok.length;
    if (ok.length) {
      conflicts += await crossTenant.writeIndexEntries(tx, key.generation, entriesOf(key, ok));
    }
    const done = users.length < d.batch;
    await repo.update(tx, operationId, { checkpoint: { ...cp, cursor: last ?? cp.cursor ?? null, processed: (cp.processed ?? 0) + users.length, conflicts: (cp.conflicts ?? 0) + conflicts } });
    return done;
  });
}

/** Checks the next batch of users (every user, whenever created): is each found by its address under the candidate key? */
export async function verifyBatch(d: WorkDeps, operationId: string, token: number): Promise<boolean> {
  return underLease(d, operationId, token, async (tx, row) => {
    const cp = row.checkpoint as unknown as Checkpoint;
    const key = await keyOf(d, tx, row.candidate_generation);
    const { users, last } = await usersAfter(d, tx, cp.cursor ?? null, d.batch, null);
    const ok = users.filter((u) => u.email !== null);
    let verified = 0;
    if (ok.length) {
      verified = await crossTenant.countIndexed(tx, key.generation, entriesOf(key, ok));
    }
    await repo.update(tx, operationId, { checkpoint: { ...cp, cursor: last ?? cp.cursor ?? null, checked: (cp.checked ?? 0) + users.length, verified: (cp.verified ?? 0) + verified, mismatches: (cp.mismatches ?? 0) + users.length - verified } });
    return users.length < d.batch;
  });
}

/** Deletes the next batch of index entries of a generation that is no longer used; true when none is left. */
export async function dropBatch(d: WorkDeps, operationId: string, token: number, generation: number): Promise<boolean> {
  return underLease(d, operationId, token, async (tx, row) => {
    const cp = row.checkpoint as unknown as Checkpoint;
    const deleted = await crossTenant.dropIndexEntries(tx, generation, d.batch * 10);
    await repo.update(tx, operationId, { checkpoint: { ...cp, deleted: (cp.deleted ?? 0) + deleted } });
    return deleted < d.batch * 10;
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs whatever work the rotation's state holds, from its checkpoint, until the state needs none:
 * reindexing (then verifying), verifying (then grace, reindexing again, or blocked), the rollback of a
 * blocked rotation, and dropping the old generation's entries of a complete one. Returns what it left
 * the rotation in. Safe to run twice at once: the lease lets one of them work at a time.
 */
export async function driveRotation(d: WorkDeps, operationId: string): Promise<string> {
  for (;;) {
    const row = await repo.get(d.sql, operationId);
    if (!row || row.finished_at !== null) return row ? `${row.state} (finished)` : 'unknown';
    if (!hasJobWork(row.state)) return row.state;
    if (row.state === 'blocked') {
      // The rollback writes source entries only once every process writes both keys again.
      const behind = await d.sql.begin((tx) => lagging(tx, { redis: d.redis, liveMs: d.liveMs }, row));
      if (behind.length) { await sleep(200); continue; }
    }
    const token = await acquireLease(d.sql, operationId, d.ownerId, d.leaseMs);
    if (token === null) { await sleep(Math.min(1000, Math.max(50, (row.lease_expires_at ?? 0) - Date.now()))); continue; }
    try {
      await runPhase(d, row, token);
    } catch (err) {
      if (err instanceof StaleFencingToken) { d.log.warn({ operationId }, 'rotation lease taken over; leaving the work to its new owner'); return 'lease lost'; }
      throw err;
    }
  }
}

/** Works one phase of a rotation to its end under one lease token, then makes the move it leads to. */
async function runPhase(d: WorkDeps, row: RotationRow, token: number): Promise<void> {
  const op = row.operation_id;
  const phase = (row.checkpoint as unknown as Checkpoint).phase;
  if (row.state === 'reindexing') {
    while (!(await indexBatch(d, op, token, 'candidate')));
    await underLease(d, op, token, (tx, r) => transition(tx, r, 'verifying', { checkpoint: { phase: 'verify', cursor: null, checked: 0, verified: 0, mismatches: 0,
      reindexed: (r.checkpoint as unknown as Checkpoint).processed ?? 0, conflicts: (r.checkpoint as unknown as Checkpoint).conflicts ?? 0 } }));
  } else if (row.state === 'verifying') {
    while (!(await verifyBatch(d, op, token)));
    const after = await underLease(d, op, token, async (tx, r) => {
      const cp = r.checkpoint as unknown as Checkpoint;
      const next = afterVerification(r.verification_attempt_count, cp.mismatches ?? 0);
      const counts = { verification_attempt_count: next.attempts, current_row_count: cp.verified ?? 0 };
      const summary = { checked: cp.checked ?? 0, verified: cp.verified ?? 0, mismatches: cp.mismatches ?? 0, reindexed: cp.reindexed ?? 0, conflicts: cp.conflicts ?? 0 };
      if (next.state === 'grace') {
        const now = Date.now();
        return transition(tx, r, 'grace', { ...counts, grace_expires_at: now + r.grace_ms, owner_id: null, lease_expires_at: null, checkpoint: { phase: 'done', ...summary } }, summary);
      }
      if (next.state === 'blocked') return block(tx, r, `verification failed ${next.attempts} times (${summary.mismatches} of ${summary.checked} users not found under the candidate key)`, counts);
      return transition(tx, r, 'reindexing', { ...counts, checkpoint: { phase: 'reindex', cursor: null, processed: 0, conflicts: 0 } }, summary);
    });
    if (after.state === 'grace') await d.scheduleGrace?.(op, (after.grace_expires_at ?? 0) - Date.now());
  } else if (row.state === 'blocked' && phase === 'rollback') {
    while (!(await indexBatch(d, op, token, 'source')));
    await underLease(d, op, token, (tx, r) => repo.update(tx, op, { checkpoint: { phase: 'drop', generation: r.candidate_generation, deleted: 0, processed: (r.checkpoint as unknown as Checkpoint).processed ?? 0 } }));
  } else if ((row.state === 'blocked' || row.state === 'complete') && phase === 'drop') {
    const gen = (row.checkpoint as unknown as Checkpoint).generation!;
    while (!(await dropBatch(d, op, token, gen)));
    await underLease(d, op, token, async (tx, r) => {
      if (r.state === 'complete') {
        await repo.retireKey(tx, r.source_generation);
        await repo.promoteKey(tx, r.candidate_generation);
      } else {
        await repo.retireKey(tx, r.candidate_generation);
      }
      const cp = r.checkpoint as unknown as Checkpoint;
      return transition(tx, r, r.state, { finished_at: Date.now(), owner_id: null, lease_expires_at: null, checkpoint: { phase: 'done', deleted: cp.deleted ?? 0 } }, { deleted_entries: cp.deleted ?? 0 });
    });
  } else {
    throw new Error(`rotation ${op}: no work for state ${row.state} phase ${phase}`);
  }
}

/**
 * The end of grace (a delayed job at graceExpiresAt): complete once every process applies grace, then
 * drop the old entries. Early or with processes behind: the caller tries again later.
 */
export async function completeAfterGrace(d: WorkDeps, operationId: string): Promise<'not_yet' | 'behind' | string> {
  const moved = await d.sql.begin(async (tx) => {
    const row = await repo.get(tx, operationId, { lock: true });
    if (!row || row.state !== 'grace' || row.finished_at !== null) return 'gone';
    if (Date.now() < (row.grace_expires_at ?? 0)) return 'not_yet';
    if ((await lagging(tx, { redis: d.redis, liveMs: d.liveMs }, row)).length) return 'behind';
    await transition(tx, row, 'complete', { checkpoint: { phase: 'drop', generation: row.source_generation, deleted: 0 } }, { grace_expired: true });
    return 'complete';
  });
  if (moved !== 'complete') return moved;
  return driveRotation(d, operationId);
}
