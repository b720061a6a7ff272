import type { Config } from '../config.js';
import type { Store } from '../store/index.js';
import { type ChunkRow, type DestinationRow } from '../store/log-archive.js';
import { archiveQueries } from '../cross-tenant/log-archive.js';
import type { Sql } from '../sql.js';
import { chunkDir, destinationsOf, primaryOf } from './archive.js';
import { locationDir, locationOf, readObject, removeObject, writeObject } from './destinations.js';

/** Where a chunk's catalog object goes when it must leave its destination. */
export interface MoveTarget { destinationId: string | null; dir: string }

/**
 * The store a chunk of `tenantId` moves to when `leaving` goes away: `to` when named, else where new
 * chunks of that tenant would be written without `leaving` (its next filesystem destination, else a
 * platform one, else the default directory).
 */
export async function moveTarget(sql: Sql, store: Store, tenantId: string, leaving: string, to: DestinationRow | null): Promise<MoveTarget> {
  if (to) return { destinationId: to.id, dir: locationOf(to) };
  const others = (await destinationsOf(sql, store.forTenant(tenantId).logArchive)).filter((d) => d.id !== leaving);
  const p = primaryOf(others);
  return { destinationId: p?.id ?? null, dir: locationOf(p) };
}

/**
 * Moves the catalog objects of every chunk `d` holds to another store: copy the object (atomic write),
 * verify it reads back byte for byte, swap the catalog entry (compare-and-swap on the location and
 * object key it was read from), then remove the old file. A chunk a rewrap changed meanwhile is read
 * again and moved on the next round. Killed at any step, the catalog names an object that exists.
 * Answers how many chunks moved.
 */
export async function moveChunksOff(ctx: { sql: Sql; store: Store; config: Config }, d: DestinationRow, to: DestinationRow | null): Promise<number> {
  const { sql, config } = ctx;
  const targets = new Map<string, MoveTarget>();
  let moved = 0;
  for (let round = 0; round < 1000; round++) {
    const batch = await archiveQueries.chunksHeldBy(sql, d, 200);
    if (!batch.length) return moved;
    let progressed = false;
    for (const c of batch) {
      let target = targets.get(c.tenant_id);
      if (!target) targets.set(c.tenant_id, (target = await moveTarget(sql, ctx.store, c.tenant_id, d.id, to)));
      if (await moveOne(config, sql, ctx.store, c, target)) { moved++; progressed = true; }
    }
    if (!progressed) throw new Error('chunks kept changing while they were moved');
  }
  throw new Error('too many chunks changed while they were moved');
}

async function moveOne(config: Config, sql: Sql, store: Store, c: ChunkRow, target: MoveTarget): Promise<boolean> {
  const from = chunkDir(config, c);
  const toDir = locationDir(config, target.dir);
  const obj = await readObject(from, c.object_key!);
  if (from !== toDir) {
    await writeObject(toDir, c.object_key!, obj);
    if (!(await readObject(toDir, c.object_key!)).equals(obj)) throw new Error(`chunk ${c.id}: the moved object does not read back`);
  }
  if (!(await archiveQueries.relocate(sql, c, target))) {
    // Rewrapped (or moved) meanwhile: the copy just written is not the catalog's, unless another mover made it so.
    const now = await store.forTenant(c.tenant_id).logArchive.chunk(c.id);
    if (from !== toDir && !(now?.object_dir === target.dir && now.object_key === c.object_key)) await removeObject(toDir, c.object_key!);
    return false;
  }
  if (from !== toDir) await removeObject(from, c.object_key!);
  return true;
}
