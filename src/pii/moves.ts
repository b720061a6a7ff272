import { declareEvents } from '../events/declare.js';
import type { Sql } from '../sql.js';
import { staleMoves } from '../cross-tenant/pii.js';
import type { PiiVault } from './vault.js';

/** A user whose PII moved partition is updated. */
const piiMoveEvents = declareEvents(['user.updated']);

/** A move in progress (`pii_moves`). */
export interface MoveIntent { tenant_id: string; user_id: string; from_partition: string; to_partition: string; step: 'copy' | 'switched' }

/**
 * Moving a user's PII between partitions is copy, switch, delete, driven by an intent row so that a crash
 * at any point is finished later by `finishMove` (from the intent alone):
 *   1. intent (`pii_moves`, step copy) — written by the caller with its audit entry;
 *   2. copy: the sealed row is upserted into the target (the source stays: readers still use it);
 *   3. switch: one transaction sets users.pii_partition and the intent's step, and records user.updated;
 *   4. delete the source row, then the intent.
 * Every step is idempotent, so a step repeated after a crash changes nothing more.
 */
export async function finishMove(sql: Sql, vault: PiiVault, m: MoveIntent): Promise<void> {
  const from = vault.partition(m.from_partition);
  const to = vault.partition(m.to_partition);
  if (m.step === 'copy') {
    const [src] = await vault.onPartition(from, (s) => s<{ sealed: Buffer }[]>`select sealed from ${s(from.table)} where tenant_id = ${m.tenant_id} and user_id = ${m.user_id}`);
    const [cur] = await sql<{ pii_partition: string }[]>`select pii_partition from users where tenant_id = ${m.tenant_id} and id = ${m.user_id}`;
    if (!cur) { await sql`delete from pii_moves where tenant_id = ${m.tenant_id} and user_id = ${m.user_id}`; return; }
    if (src && cur.pii_partition === m.from_partition) {
      await vault.onPartition(to, (s) => s`insert into ${s(to.table)} (tenant_id, user_id, sealed) values (${m.tenant_id}, ${m.user_id}, ${src.sealed})
        on conflict (tenant_id, user_id) do update set sealed = excluded.sealed`);
    }
    await sql.begin(async (tx) => {
      const [u] = await tx<{ pii_partition: string }[]>`update users set pii_partition = ${m.to_partition}, updated_at = now_ms()
        where tenant_id = ${m.tenant_id} and id = ${m.user_id} and pii_partition = ${m.from_partition} returning pii_partition`;
      await tx`update pii_moves set step = 'switched' where tenant_id = ${m.tenant_id} and user_id = ${m.user_id}`;
      if (u) await piiMoveEvents.emit(tx, m.tenant_id, 'user.updated', { user_id: m.user_id, changed: ['pii_partition'], pii_partition: m.to_partition });
    });
  }
  if (m.from_partition !== m.to_partition) {
    await vault.onPartition(from, (s) => s`delete from ${s(from.table)} where tenant_id = ${m.tenant_id} and user_id = ${m.user_id}`);
  }
  await sql`delete from pii_moves where tenant_id = ${m.tenant_id} and user_id = ${m.user_id}`;
}

/** The move of one user left by a crash, if any. */
export async function pendingMove(sql: Sql, tenantId: string, userId: string): Promise<MoveIntent | null> {
  const [m] = await sql<MoveIntent[]>`select tenant_id, user_id, from_partition, to_partition, step from pii_moves where tenant_id = ${tenantId} and user_id = ${userId}`;
  return m ?? null;
}

/** Finishes every move older than `olderThanMs` (left by a crashed process); run at process start. */
export async function finishStaleMoves(sql: Sql, vault: PiiVault, olderThanMs: number): Promise<number> {
  const rows = await staleMoves<MoveIntent>(sql, olderThanMs);
  for (const m of rows) await finishMove(sql, vault, m);
  return rows.length;
}
