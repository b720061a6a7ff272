import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/index.js';
import { type ChunkRow, type LogArchiveRepository } from '../store/log-archive.js';
import { archiveQueries } from '../cross-tenant/log-archive.js';
import type { Sql } from '../sql.js';
import { openChunk, sealChunk, sealVersionKey } from './chunk-crypto.js';
import { chunkDir, objectKey, readChunk, versionKey } from './archive.js';
import { locationDir, locationOf, removeObject, writeObject } from './destinations.js';

/**
 * Makes a new active version of a registry (in the caller's transaction, registry row locked). The
 * previous active version becomes `rewrap_required` when chunks use it, else `retired`.
 */
export async function rotateRegistry(config: Config, repo: LogArchiveRepository, tenantId: string, registryId: string)
  : Promise<{ from: number; to: number; previous_status: 'rewrap_required' | 'retired' }> {
  const reg = (await repo.registry(registryId, true))!;
  const versions = await repo.versions(registryId);
  const next = Math.max(...versions.map((v) => v.version)) + 1;
  const from = reg.active_version;
  await repo.addVersion(registryId, next, sealVersionKey(config.keyEncryptionKey, tenantId, registryId, next));
  const used = await repo.chunksUsing(registryId, from);
  const previous_status = used > 0 ? 'rewrap_required' : 'retired';
  // A compromised version stays compromised until no chunk uses it.
  await repo.setVersionStatus(registryId, from, previous_status, ['active']);
  return { from, to: next, previous_status };
}

/** A stale or compromised version no chunk uses any more is retired. */
export async function retireIfUnused(repo: LogArchiveRepository, registryId: string, version: number): Promise<boolean> {
  if ((await repo.chunksUsing(registryId, version)) > 0) return false;
  return repo.setVersionStatus(registryId, version, 'retired', ['rewrap_required', 'compromised']);
}

/**
 * One rewrap job: decrypt the chunk under its old version, re-encrypt it under the registry's active
 * version to a new object in the directory the catalog records (and next to each filesystem copy),
 * verify the new object's plaintext sha256, swap the catalog entry (compare-and-swap on the old version
 * and location) together with queueing the new object for the http_sinks that were sent the chunk,
 * then delete the old object. A kill at any step leaves the catalog on the old object (still there) or
 * on the new one (already written): never lost.
 */
export async function runRewrap(ctx: { store: Store; sql: Sql; config: Config; log: Logger }, tenantId: string, jobId: string): Promise<string> {
  const { config } = ctx;
  const repo = ctx.store.forTenant(tenantId).logArchive;
  const job = await repo.rewrapJob(jobId);
  if (!job || job.status === 'succeeded' || job.status === 'failed') return job?.status ?? 'gone';
  await repo.setRewrapStatus(jobId, 'running');
  const chunk = await repo.chunk(job.chunk_id);
  if (!chunk || chunk.status !== 'committed') { await repo.setRewrapStatus(jobId, 'failed', { error: 'chunk not found' }); return 'failed'; }
  const reg = (await repo.registry(job.key_registry_id))!;
  const active = reg.active_version;
  const dir = chunkDir(config, chunk);
  const oldKey = objectKey(chunk, job.from_version);
  const fsCopies = await copyDirs(ctx.sql, config, chunk);
  if (chunk.key_version === active || chunk.key_version !== job.from_version) {
    // Swapped already (a run killed after the swap): finish the cleanup.
    if (chunk.key_version !== job.from_version) for (const d of [dir, ...fsCopies]) await removeObject(d, oldKey);
    await repo.setRewrapStatus(jobId, 'succeeded', { toVersion: chunk.key_version! });
    await retireIfUnused(repo, job.key_registry_id, job.from_version);
    return 'succeeded';
  }
  const { plain, sha256 } = await readChunk(config, repo, chunk);
  const key = await versionKey(config, repo, tenantId, reg.id, active);
  const obj = sealChunk(plain, key, { chunk_id: chunk.id, tenant_id: tenantId, log_type: chunk.log_type, plane: chunk.plane, hour_start: Number(chunk.hour_start), key_registry_id: reg.id, key_version: active });
  if (openChunk(obj, () => key).sha256 !== sha256 || sha256 !== chunk.sha256) throw new Error('re-encrypted chunk does not verify');
  const newKey = objectKey(chunk, active);
  await writeObject(dir, newKey, obj);
  for (const d of fsCopies) await writeObject(d, newKey, obj);
  // One statement: the catalog swap, and the re-encrypted copy queued for the sinks that were sent (or owed) the old one.
  const swapped = await repo.swapRewrapped(chunk.id, { version: job.from_version, objectKey: oldKey, dir: chunk.object_dir! }, { version: active, objectKey: newKey, bytes: obj.length });
  if (!swapped) {
    // Moved (or rewrapped by another run) meanwhile: the next attempt reads it where it is now. The
    // object written here goes, unless another run of this job made it the catalog object.
    const now = await repo.chunk(chunk.id);
    if (!(now?.object_dir === chunk.object_dir && now.object_key === newKey)) await removeObject(dir, newKey);
    throw new Error('chunk changed during rewrap');
  }
  for (const d of [dir, ...fsCopies]) await removeObject(d, oldKey);
  await repo.setRewrapStatus(jobId, 'succeeded', { toVersion: active });
  await retireIfUnused(repo, job.key_registry_id, job.from_version);
  return 'succeeded';
}

/** The directories of a chunk's filesystem copies on destinations that still exist, platform ones included (where each was written; older rows: where the destination writes now). */
async function copyDirs(sql: Sql, config: Config, chunk: ChunkRow): Promise<string[]> {
  const primary = chunkDir(config, chunk);
  const out: string[] = [];
  for (const e of chunk.delivered) {
    if (!e.ok || e.destination_id === chunk.destination_id) continue;
    const d = await archiveQueries.servingDestination(sql, chunk.tenant_id, e.destination_id);
    if (!d || d.kind !== 'filesystem') continue;
    const dir = locationDir(config, e.dir ?? locationOf(d));
    if (dir !== primary && !out.includes(dir)) out.push(dir);
  }
  return out;
}
