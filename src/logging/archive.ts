import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { newId } from '../store/ids.js';
import { Store } from '../store/index.js';
import { LogArchiveRepository, type ChunkRow, type DestinationRow } from '../store/log-archive.js';
import { archiveQueries } from '../cross-tenant/log-archive.js';
import type { Db, Sql } from '../sql.js';
import { lockLiveTenants } from '../store/tenants.js';
import { openChunk, openVersionKey, plaintextOf, sealChunk, sealVersionKey } from './chunk-crypto.js';
import { locationDir, locationOf, readObject, removeObject, writeObject } from './destinations.js';
import type { Lane, LogAdmission, LogType, Plane, UsageMeter } from './types.js';
import { PiiVault } from '../pii/vault.js';
import { openFields } from '../sealed-fields.js';

export interface ArchiveCtx { sql: Sql; config: Config; log: Logger; admission: LogAdmission; meter: UsageMeter }

/** `<tenant>/<log_type>/<plane>/<YYYY>/<MM>/<DD>/<HH>/<chunk>.v<version>.log.enc`: the version is in the key, so a rewrap writes a new object. */
export function objectKey(c: Pick<ChunkRow, 'tenant_id' | 'log_type' | 'plane' | 'hour_start' | 'id'>, version: number): string {
  const d = new Date(Number(c.hour_start)).toISOString();
  return `${c.tenant_id}/${c.log_type}/${c.plane}/${d.slice(0, 4)}/${d.slice(5, 7)}/${d.slice(8, 10)}/${d.slice(11, 13)}/${c.id}.v${version}.log.enc`;
}

/** The key of a registry version, opened from its sealed form. */
export async function versionKey(config: Config, repo: LogArchiveRepository, tenantId: string, registryId: string, version: number): Promise<Buffer> {
  const v = await repo.version(registryId, version);
  if (!v) throw new Error(`key version ${registryId}/${version} not found`);
  return openVersionKey(config.keyEncryptionKey, tenantId, registryId, version, v.key_enc);
}

/** The registry of (tenant, log_type, plane), created with its first version on first use. */
export function ensureRegistry(config: Config, repo: LogArchiveRepository, tenantId: string, logType: string, plane: string) {
  return repo.ensureRegistry(newId('lkr'), logType, plane, (version, registryId) => sealVersionKey(config.keyEncryptionKey, tenantId, registryId, version));
}

/** Where a chunk's catalog object lives: the tenant's first filesystem destination, else a platform one, else the default directory. */
export function primaryOf(dests: DestinationRow[]): DestinationRow | null {
  return dests.find((d) => d.kind === 'filesystem' && d.scope === 'tenant') ?? dests.find((d) => d.kind === 'filesystem') ?? null;
}

/** The destinations that receive a tenant's chunks: its own enabled ones, then the platform's. */
export async function destinationsOf(sql: Sql, repo: LogArchiveRepository): Promise<DestinationRow[]> {
  const own = await repo.activeDestinations();
  return [...own.filter((d) => d.scope === 'tenant'), ...(await archiveQueries.platformDestinations(sql))];
}

/** The directory holding a committed chunk's catalog object: where it was written (recorded then), never where its destination writes now. */
export function chunkDir(config: Config, c: Pick<ChunkRow, 'object_dir'>): string {
  if (c.object_dir === null) throw new Error('chunk has no recorded location');
  return locationDir(config, c.object_dir);
}

/** Reads and decrypts a committed chunk's catalog object; verifies it against the catalog's sha256. */
export async function readChunk(config: Config, repo: LogArchiveRepository, c: ChunkRow): Promise<{ plain: Buffer; sha256: string; object: Buffer }> {
  const object = await readObject(chunkDir(config, c), c.object_key!);
  const keys = new Map<string, Buffer>();
  const pre = await versionKey(config, repo, c.tenant_id, c.key_registry_id!, c.key_version!);
  keys.set(`${c.key_registry_id}:${c.key_version}`, pre);
  const opened = openChunk(object, (r, v) => {
    const k = keys.get(`${r}:${v}`);
    if (!k) throw new Error('chunk names a key version other than its catalog entry');
    return k;
  });
  if (opened.sha256 !== c.sha256) throw new Error(`chunk ${c.id}: plaintext sha256 does not match the catalog`);
  return { plain: opened.plain, sha256: opened.sha256, object };
}

/**
 * One archive run: claims unclaimed records into pending chunks (one per tenant, log_type, plane and
 * hour, at most LOG_CHUNK_MAX_RECORDS each), then finishes every pending chunk (a crashed run's
 * included): encrypt, write, commit, and only then delete its records (their acknowledgement). One
 * run at a time across processes (an advisory lock, released if the process dies).
 */
export async function runArchive(ctx: ArchiveCtx): Promise<{ committed: number; records: number } | null> {
  // The lock is transaction-scoped, held by an otherwise idle transaction for the run (and released if the
  // process dies). Not sql.reserve() with a session lock: postgres.js never hands out a reserved connection
  // it had to open while fetch_types is off (src/sql.ts), so the first run hung.
  return ctx.sql.begin(async (lockTx) => {
    const [got] = await lockTx<Array<{ ok: boolean }>>`select pg_try_advisory_xact_lock(hashtext('svc:log-archive')) as ok`;
    if (!got?.ok) return null;
    {
      for (let i = 0; i < 20; i++) {
        const n = await ctx.sql.begin((tx) => archiveQueries.claim(tx, ctx.config.logChunkMaxRecords, () => newId('lch')));
        if (n < ctx.config.logChunkMaxRecords) break;
      }
      let committed = 0;
      let records = 0;
      const store = new Store(ctx.sql, PiiVault.fromConfig(ctx.config, ctx.sql));
      for (const p of await archiveQueries.pending(ctx.sql, 1000)) {
        // One chunk that cannot be written (its destination is away) must not hold back the others: it stays pending.
        try {
          const n = await commitChunk(ctx, store, p.tenant_id, p.id);
          if (n !== null) { committed++; records += n; }
        } catch (err) {
          ctx.log.warn({ chunk: p.id, tenant: p.tenant_id, err: (err as NodeJS.ErrnoException).code ?? (err as Error).message }, 'log chunk not committed; retried next run');
        }
      }
      return { committed, records };
    }
  });
}

/** Deletes a pending chunk and its records: nothing of it is archived (every record dropped, or its tenant tombstoned). */
async function dropChunk(db: Db, tenantId: string, chunkId: string): Promise<void> {
  await db`delete from log_records where tenant_id = ${tenantId} and chunk_id = ${chunkId}`;
  await db`delete from log_chunks where tenant_id = ${tenantId} and id = ${chunkId} and status = 'pending'`;
}

/**
 * Finishes one pending chunk; answers its record count once committed (null when there was nothing to
 * commit). The chunk of a tombstoned tenant is dropped, never archived: checked in the transaction that
 * creates its key registry (when it has none yet) and in the transaction that commits it.
 */
async function commitChunk(ctx: ArchiveCtx, store: Store, tenantId: string, chunkId: string): Promise<number | null> {
  const { config, admission, meter } = ctx;
  const repo = store.forTenant(tenantId).logArchive;
  const chunk = await repo.chunk(chunkId);
  if (!chunk || chunk.status !== 'pending') return null;
  const logType = chunk.log_type as LogType;
  const plane = chunk.plane as Plane;
  const rows = await repo.chunkRecords(chunkId);
  const kept: typeof rows = [];
  for (const r of rows) {
    const lane = r.lane as Lane;
    // Records written inside a business transaction are admitted and metered here (buffered ones were on append).
    if (!r.metered) {
      if (lane !== 'critical' && !admission.admit(tenantId, logType, plane, lane)) { meter.count(tenantId, logType, plane, lane, 'dropped_records', 1); continue; }
      meter.count(tenantId, logType, plane, lane, 'records', 1);
      meter.count(tenantId, logType, plane, lane, 'bytes', Buffer.byteLength(JSON.stringify(r.body)));
    }
    kept.push(r);
  }
  if (!kept.length) {
    await ctx.sql.begin((tx) => dropChunk(tx, tenantId, chunkId));
    return null;
  }
  const registry = (await repo.registryFor(chunk.log_type, chunk.plane)) ?? await store.transaction(tenantId, async (s, tx) => ((await lockLiveTenants(tx, [tenantId])).size
    ? ensureRegistry(config, s.logArchive, tenantId, chunk.log_type, chunk.plane) : null));
  if (!registry) { await ctx.sql.begin((tx) => dropChunk(tx, tenantId, chunkId)); return null; }
  const version = registry.active_version;
  const key = await versionKey(config, repo, tenantId, registry.id, version);
  const { plain, sha256 } = plaintextOf(kept.map((r) => ({ ts: Number(r.ts), tenant_id: tenantId, log_type: r.log_type, plane: r.plane, lane: r.lane, body: openFields(tenantId, r.body) })));
  const obj = sealChunk(plain, key, { chunk_id: chunkId, tenant_id: tenantId, log_type: chunk.log_type, plane: chunk.plane, hour_start: Number(chunk.hour_start), key_registry_id: registry.id, key_version: version });
  const okey = objectKey(chunk, version);
  const dests = await destinationsOf(ctx.sql, repo);
  const primary = primaryOf(dests);
  // Where the object goes is decided (and recorded) now: the destination may change directory or go away later.
  const location = locationOf(primary);
  // The catalog object first: without it nothing is committed and the chunk stays pending for the next run.
  await writeObject(locationDir(config, location), okey, obj);
  const delivered: ChunkRow['delivered'] = [];
  for (const d of dests) {
    if (d.kind !== 'filesystem') continue;
    const dir = locationOf(d);
    if (d === primary) { delivered.push({ destination_id: d.id, ok: true, dir }); continue; }
    try {
      await writeObject(locationDir(config, dir), okey, obj);
      delivered.push({ destination_id: d.id, ok: true, dir });
    } catch (err) {
      delivered.push({ destination_id: d.id, ok: false, error: (err as NodeJS.ErrnoException).code ?? 'write failed' });
    }
  }
  // http_sinks are sent the object by the log worker's delivery pass, retried until they take it (src/logging/delivery.ts).
  const sinks = dests.filter((d) => d.kind === 'http_sink').map((d) => d.id);
  const done = await ctx.sql.begin(async (tx) => {
    if (!(await lockLiveTenants(tx, [tenantId])).size) { await dropChunk(tx, tenantId, chunkId); return 'dropped' as const; }
    // The primary must still exist (share-locked until the commit, so deleting it waits for this chunk and
    // then moves it): one deleted meanwhile leaves the chunk pending, written elsewhere by the next run.
    if (primary && !(await archiveQueries.lockDestination(tx, primary.id))) return 'gone' as const;
    const r = await tx`update log_chunks set status = 'committed', record_count = ${kept.length}, byte_count = ${obj.length}, plain_bytes = ${plain.length},
        sha256 = ${sha256}, key_registry_id = ${registry.id}, key_version = ${version}, object_key = ${okey},
        destination_id = ${primary?.id ?? null}, object_dir = ${location},
        delivered = ${tx.json(delivered as never)}, committed_at = now_ms()
      where tenant_id = ${tenantId} and id = ${chunkId} and status = 'pending'`;
    if (r.count === 0) return false;
    await new LogArchiveRepository(tx, tenantId).queueDeliveries(chunkId, okey, version, sinks);
    await tx`delete from log_records where tenant_id = ${tenantId} and chunk_id = ${chunkId}`;
    // A rotation between encryption and commit may have retired this version as unused: it is used now.
    await tx`update log_key_versions set status = 'rewrap_required', updated_at = now_ms()
      where tenant_id = ${tenantId} and registry_id = ${registry.id} and version = ${version} and status = 'retired'`;
    return true;
  });
  if (done === 'dropped') {
    // Tombstoned while it was being written: its object goes too (its key registry goes with the purge anyway).
    await removeObject(locationDir(config, location), okey).catch(() => {});
    return null;
  }
  if (done === 'gone') {
    await removeObject(locationDir(config, location), okey);
    throw new Error('its destination was deleted while it was written');
  }
  if (!done) return null;
  meter.count(tenantId, logType, plane, kept[0]!.lane as Lane, 'chunks', 1);
  return kept.length;
}
