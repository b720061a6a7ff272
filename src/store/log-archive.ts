import type { Cursor } from './cursor.js';
import type { Db } from '../sql.js';
import { TOMBSTONE_STATUSES } from './tenants.js';

/** One record as stored while it waits for its chunk (the fields of src/logging/types.ts LogRecord). */
export interface LogRecordInput {
  tenantId: string; logType: string; plane: string; lane: string; ts: number; body: Record<string, unknown>;
}

export type KeyVersionStatus = 'active' | 'retired' | 'rewrap_required' | 'compromised';
export interface KeyRegistryRow { tenant_id: string; id: string; log_type: string; plane: string; active_version: number; created_at: number; updated_at: number }
export interface KeyVersionRow { tenant_id: string; registry_id: string; version: number; status: KeyVersionStatus; key_enc: Buffer; created_at: number; updated_at: number }

export interface DestinationRow {
  tenant_id: string; id: string; scope: 'platform' | 'tenant'; kind: 'filesystem' | 'http_sink'; name: string;
  config: { directory?: string; url?: string; timeout_ms?: number }; enabled: boolean;
  health: 'unknown' | 'healthy' | 'degraded' | 'failing'; health_detail: string | null; health_checked_at: number | null;
  rotation_state: 'idle' | 'prepared' | 'overlap'; created_at: number; updated_at: number;
}
export interface CredentialRow {
  tenant_id: string; destination_id: string; version: number; status: 'next' | 'current' | 'previous' | 'retired' | 'aborted';
  backend: 'encrypted_object_store' | 'encrypted_table'; content_type: string | null; secret_enc: Buffer | null; object_path: string | null;
  created_at: number; activated_at: number | null; retire_after: number | null; retired_at: number | null;
}
export interface ChunkRow {
  tenant_id: string; id: string; log_type: string; plane: string; hour_start: number; status: 'pending' | 'committed';
  record_count: number; byte_count: number | null; plain_bytes: number | null; sha256: string | null; key_registry_id: string | null;
  key_version: number | null; object_key: string | null; destination_id: string | null;
  /** The directory (relative to LOG_ARCHIVE_DIR) the catalog object was written to; null while pending. */
  object_dir: string | null;
  /** Filesystem copies (and, before migration 0135, http_sink deliveries): `dir` is where the copy was written. */
  delivered: Array<{ destination_id: string; ok: boolean; status?: number; error?: string; dir?: string }>;
  created_at: number; committed_at: number | null;
}
/** One object (a chunk's current one, or a re-encrypted copy) owed to one http_sink. */
export interface DeliveryRow {
  tenant_id: string; id: string; chunk_id: string; destination_id: string; object_key: string; key_version: number;
  supersedes_object_key: string | null; supersedes_key_version: number | null; status: 'pending' | 'delivered' | 'superseded';
  attempts: number; next_attempt_at: number; last_attempt_at: number | null; last_status: number | null; last_error: string | null;
  created_at: number; delivered_at: number | null;
}
/** What a destination still owes: pending deliveries, the oldest, when the next attempt is due and how the last one went. */
export interface Backlog { pending: number; oldest_pending_at: number | null; next_attempt_at: number | null; attempts: number; last_error: string | null; last_status: number | null }
export interface RewrapJobRow {
  tenant_id: string; id: string; batch_id: string; key_registry_id: string; chunk_id: string; from_version: number; to_version: number | null;
  status: 'queued' | 'running' | 'succeeded' | 'failed'; error: string | null; created_at: number; updated_at: number;
}

/**
 * Appends records in one statement (a batch from a process buffer, or the records of one business
 * transaction). `liveTenantsOnly` (a process buffer, written outside any transaction of its tenant):
 * records of a tombstoned tenant are left out by the statement itself, so a buffer flushed after a
 * deletion the process has not heard of yet adds nothing behind the purge.
 */
export async function insertLogRecords(db: Db, records: readonly LogRecordInput[], metered: boolean, opts: { liveTenantsOnly?: boolean } = {}): Promise<void> {
  if (!records.length) return;
  if (opts.liveTenantsOnly) {
    await db`insert into log_records (tenant_id, log_type, plane, lane, ts, body, metered)
      select x.tenant_id, x.log_type, x.plane, x.lane, x.ts::bigint, x.body::jsonb, ${metered}
      from unnest(${records.map((r) => r.tenantId)}::text[], ${records.map((r) => r.logType)}::text[], ${records.map((r) => r.plane)}::text[],
        ${records.map((r) => r.lane)}::text[], ${records.map((r) => String(r.ts))}::text[], ${records.map((r) => JSON.stringify(r.body))}::text[])
        with ordinality as x(tenant_id, log_type, plane, lane, ts, body, n)
      where not exists (select 1 from tenants t where t.id = x.tenant_id and t.status = any(${TOMBSTONE_STATUSES as string[]}::text[]))
      order by x.n`;
    return;
  }
  const rows = records.map((r) => ({ tenant_id: r.tenantId, log_type: r.logType, plane: r.plane, lane: r.lane, ts: r.ts, body: JSON.parse(JSON.stringify(r.body)) as never, metered }));
  await db`insert into log_records ${db(rows, 'tenant_id', 'log_type', 'plane', 'lane', 'ts', 'body', 'metered')}`;
}

/**
 * The archive tables of one tenant: key registries and versions, destinations and their credentials,
 * the chunk catalog and rewrap jobs.
 */
export class LogArchiveRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  // --- key registries ---
  async registry(id: string, lock = false): Promise<KeyRegistryRow | null> {
    const [r] = await this.db<KeyRegistryRow[]>`select * from log_key_registries where tenant_id = ${this.tenantId} and id = ${id} ${lock ? this.db`for update` : this.db``}`;
    return r ?? null;
  }
  async registryFor(logType: string, plane: string): Promise<KeyRegistryRow | null> {
    const [r] = await this.db<KeyRegistryRow[]>`select * from log_key_registries where tenant_id = ${this.tenantId} and log_type = ${logType} and plane = ${plane}`;
    return r ?? null;
  }
  /** Creates the registry with its first version unless it exists; answers the registry either way. */
  async ensureRegistry(id: string, logType: string, plane: string, keyEnc: (version: number, registryId: string) => Buffer): Promise<KeyRegistryRow> {
    const [made] = await this.db<KeyRegistryRow[]>`
      insert into log_key_registries (tenant_id, id, log_type, plane, active_version) values (${this.tenantId}, ${id}, ${logType}, ${plane}, 1)
      on conflict (tenant_id, log_type, plane) do nothing returning *`;
    if (made) {
      await this.db`insert into log_key_versions (tenant_id, registry_id, version, status, key_enc) values (${this.tenantId}, ${id}, 1, 'active', ${keyEnc(1, id)})`;
      return made;
    }
    return (await this.registryFor(logType, plane))!;
  }
  registries(): Promise<KeyRegistryRow[]> {
    return this.db<KeyRegistryRow[]>`select * from log_key_registries where tenant_id = ${this.tenantId} order by log_type, plane`;
  }
  versions(registryId: string): Promise<KeyVersionRow[]> {
    return this.db<KeyVersionRow[]>`select * from log_key_versions where tenant_id = ${this.tenantId} and registry_id = ${registryId} order by version`;
  }
  async version(registryId: string, version: number): Promise<KeyVersionRow | null> {
    const [v] = await this.db<KeyVersionRow[]>`select * from log_key_versions where tenant_id = ${this.tenantId} and registry_id = ${registryId} and version = ${version}`;
    return v ?? null;
  }
  async addVersion(registryId: string, version: number, keyEnc: Buffer): Promise<void> {
    await this.db`insert into log_key_versions (tenant_id, registry_id, version, status, key_enc) values (${this.tenantId}, ${registryId}, ${version}, 'active', ${keyEnc})`;
    await this.db`update log_key_registries set active_version = ${version}, updated_at = now_ms() where tenant_id = ${this.tenantId} and id = ${registryId}`;
  }
  async setVersionStatus(registryId: string, version: number, status: KeyVersionStatus, onlyFrom?: KeyVersionStatus[]): Promise<boolean> {
    const r = await this.db`update log_key_versions set status = ${status}, updated_at = now_ms()
      where tenant_id = ${this.tenantId} and registry_id = ${registryId} and version = ${version}
      ${onlyFrom ? this.db`and status = any(${onlyFrom}::text[])` : this.db``}`;
    return r.count > 0;
  }
  /** Chunks (pending or committed) that use a version. */
  async chunksUsing(registryId: string, version: number): Promise<number> {
    const [r] = await this.db<Array<{ n: number }>>`select count(*)::int as n from log_chunks where tenant_id = ${this.tenantId} and key_registry_id = ${registryId} and key_version = ${version}`;
    return r!.n;
  }
  /** Counts of committed chunks per version of a registry. */
  async chunkCountsByVersion(registryId: string): Promise<Map<number, number>> {
    const rows = await this.db<Array<{ v: number; n: number }>>`select key_version as v, count(*)::int as n from log_chunks
      where tenant_id = ${this.tenantId} and key_registry_id = ${registryId} and status = 'committed' group by key_version`;
    return new Map(rows.map((r) => [r.v, r.n]));
  }

  // --- destinations ---
  async destination(id: string, lock = false): Promise<DestinationRow | null> {
    const [d] = await this.db<DestinationRow[]>`select * from log_destinations where tenant_id = ${this.tenantId} and id = ${id} ${lock ? this.db`for update` : this.db``}`;
    return d ?? null;
  }
  destinations(f: { limit: number; cursor?: Cursor | undefined }): Promise<DestinationRow[]> {
    const sql = this.db;
    return sql<DestinationRow[]>`select * from log_destinations where tenant_id = ${this.tenantId}
      ${f.cursor ? sql`and (created_at, id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
      order by created_at desc, id desc limit ${f.limit + 1}`;
  }
  async insertDestination(d: Pick<DestinationRow, 'id' | 'scope' | 'kind' | 'name' | 'config' | 'enabled'>): Promise<DestinationRow> {
    const [row] = await this.db<DestinationRow[]>`insert into log_destinations (tenant_id, id, scope, kind, name, config, enabled)
      values (${this.tenantId}, ${d.id}, ${d.scope}, ${d.kind}, ${d.name}, ${this.db.json(d.config as never)}, ${d.enabled}) returning *`;
    return row!;
  }
  async updateDestination(id: string, p: { name?: string | undefined; config?: DestinationRow['config'] | undefined; enabled?: boolean | undefined; rotation_state?: DestinationRow['rotation_state'] | undefined }): Promise<DestinationRow | null> {
    const sql = this.db;
    const [row] = await sql<DestinationRow[]>`update log_destinations set
      name = coalesce(${p.name ?? null}, name), config = coalesce(${p.config ? sql.json(p.config as never) : null}, config),
      enabled = coalesce(${p.enabled ?? null}, enabled), rotation_state = coalesce(${p.rotation_state ?? null}, rotation_state), updated_at = now_ms()
      where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return row ?? null;
  }
  async deleteDestination(id: string): Promise<boolean> {
    return (await this.db`delete from log_destinations where tenant_id = ${this.tenantId} and id = ${id}`).count > 0;
  }
  async setHealth(id: string, health: DestinationRow['health'], detail: string | null): Promise<void> {
    await this.db`update log_destinations set health = ${health}, health_detail = ${detail}, health_checked_at = now_ms() where tenant_id = ${this.tenantId} and id = ${id}`;
  }
  /** The tenant's enabled destinations. */
  activeDestinations(): Promise<DestinationRow[]> {
    return this.db<DestinationRow[]>`select * from log_destinations where tenant_id = ${this.tenantId} and enabled order by created_at, id`;
  }

  // --- destination credentials ---
  credentials(destinationId: string): Promise<CredentialRow[]> {
    return this.db<CredentialRow[]>`select * from log_destination_credentials where tenant_id = ${this.tenantId} and destination_id = ${destinationId} order by version`;
  }
  async insertCredential(c: Pick<CredentialRow, 'destination_id' | 'version' | 'status' | 'backend' | 'content_type' | 'secret_enc' | 'object_path'>): Promise<void> {
    await this.db`insert into log_destination_credentials (tenant_id, destination_id, version, status, backend, content_type, secret_enc, object_path, activated_at)
      values (${this.tenantId}, ${c.destination_id}, ${c.version}, ${c.status}, ${c.backend}, ${c.content_type}, ${c.secret_enc}, ${c.object_path},
        ${c.status === 'current' ? Date.now() : null})`;
  }
  async setCredential(destinationId: string, version: number, p: { status: CredentialRow['status']; activated_at?: number; retire_after?: number | null; retired_at?: number }): Promise<void> {
    await this.db`update log_destination_credentials set status = ${p.status}, activated_at = coalesce(${p.activated_at ?? null}, activated_at),
      retire_after = ${p.retire_after ?? null}, retired_at = coalesce(${p.retired_at ?? null}, retired_at)
      where tenant_id = ${this.tenantId} and destination_id = ${destinationId} and version = ${version}`;
  }

  // --- chunks ---
  async chunk(id: string): Promise<ChunkRow | null> {
    const [c] = await this.db<ChunkRow[]>`select * from log_chunks where tenant_id = ${this.tenantId} and id = ${id}`;
    return c ?? null;
  }
  chunks(f: { limit: number; cursor?: Cursor | undefined; status?: string | undefined; log_type?: string | undefined }): Promise<ChunkRow[]> {
    const sql = this.db;
    return sql<ChunkRow[]>`select * from log_chunks where tenant_id = ${this.tenantId}
      ${f.status ? sql`and status = ${f.status}` : sql``} ${f.log_type ? sql`and log_type = ${f.log_type}` : sql``}
      ${f.cursor ? sql`and (created_at, id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
      order by created_at desc, id desc limit ${f.limit + 1}`;
  }
  /** The records a chunk claimed, in append order. */
  chunkRecords(chunkId: string): Promise<Array<{ id: string; log_type: string; plane: string; lane: string; ts: number; body: Record<string, unknown>; metered: boolean }>> {
    return this.db`select id, log_type, plane, lane, ts, body, metered from log_records where tenant_id = ${this.tenantId} and chunk_id = ${chunkId} order by id` as never;
  }
  /** Committed chunks on a version whose status is stale or compromised, compromised first. */
  rewrapCandidates(registryId: string, fromVersion: number | undefined): Promise<Array<{ id: string; key_version: number; open: boolean }>> {
    const sql = this.db;
    return sql`select c.id, c.key_version, exists (select 1 from log_rewrap_jobs j where j.tenant_id = c.tenant_id and j.chunk_id = c.id and j.status in ('queued', 'running')) as open
      from log_chunks c join log_key_versions v on v.tenant_id = c.tenant_id and v.registry_id = c.key_registry_id and v.version = c.key_version
      where c.tenant_id = ${this.tenantId} and c.key_registry_id = ${registryId} and c.status = 'committed'
        and v.status in ('rewrap_required', 'compromised') ${fromVersion !== undefined ? sql`and c.key_version = ${fromVersion}` : sql``}
      order by (v.status = 'compromised') desc, c.key_version, c.created_at, c.id` as never;
  }

  /** Committed chunks whose catalog object is held by a destination (ids, oldest first). */
  async chunksHeldBy(destinationId: string, limit: number): Promise<ChunkRow[]> {
    return this.db<ChunkRow[]>`select * from log_chunks where tenant_id = ${this.tenantId} and destination_id = ${destinationId} and status = 'committed'
      order by created_at, id limit ${limit}`;
  }

  // --- http_sink deliveries ---
  /** Queues the delivery of a chunk's object to sinks (in the caller's transaction); an object already queued for a sink is left as it is. */
  async queueDeliveries(chunkId: string, objectKey: string, keyVersion: number, destinationIds: string[]): Promise<void> {
    if (!destinationIds.length) return;
    const rows = destinationIds.map((d) => ({ tenant_id: this.tenantId, chunk_id: chunkId, destination_id: d, object_key: objectKey, key_version: keyVersion }));
    await this.db`insert into log_deliveries ${this.db(rows, 'tenant_id', 'chunk_id', 'destination_id', 'object_key', 'key_version')}
      on conflict (tenant_id, chunk_id, destination_id, object_key) do nothing`;
  }
  /**
   * A rewrap's swap, in one statement: the catalog entry moves to the new object if it is still on the old
   * version at the location the rewrap read (compare-and-swap); then pending deliveries of the old object
   * are moot (`superseded`), and every http_sink that was sent or owed it (and still exists) is owed the
   * new one, naming the old. Answers whether it swapped.
   */
  async swapRewrapped(chunkId: string, from: { version: number; objectKey: string; dir: string }, to: { version: number; objectKey: string; bytes: number }): Promise<boolean> {
    const t = this.tenantId;
    const [r] = await this.db<Array<{ n: number }>>`
      with swapped as (
        update log_chunks set key_version = ${to.version}, object_key = ${to.objectKey}, byte_count = ${to.bytes}
        where tenant_id = ${t} and id = ${chunkId} and status = 'committed' and key_version = ${from.version} and object_dir = ${from.dir}
        returning id),
      superseded as (
        update log_deliveries set status = 'superseded'
        where tenant_id = ${t} and chunk_id = ${chunkId} and status = 'pending' and exists (select 1 from swapped)),
      queued as (
        insert into log_deliveries (tenant_id, chunk_id, destination_id, object_key, key_version, supersedes_object_key, supersedes_key_version)
        select distinct ${t}, ${chunkId}, l.destination_id, ${to.objectKey}, ${to.version}::integer, ${from.objectKey}, ${from.version}::integer
          from log_deliveries l join log_destinations d on d.id = l.destination_id and d.kind = 'http_sink'
          where l.tenant_id = ${t} and l.chunk_id = ${chunkId} and exists (select 1 from swapped)
        on conflict (tenant_id, chunk_id, destination_id, object_key) do nothing)
      select count(*)::int as n from swapped`;
    return r!.n > 0;
  }
  /** The deliveries of some chunks, oldest first. */
  deliveriesOf(chunkIds: string[]): Promise<DeliveryRow[]> {
    if (!chunkIds.length) return Promise.resolve([]);
    return this.db<DeliveryRow[]>`select * from log_deliveries where tenant_id = ${this.tenantId} and chunk_id = any(${chunkIds}::text[]) order by id`;
  }

  // --- rewrap jobs ---
  /** Inserts a queued job unless the chunk has an open one; answers whether it was inserted. */
  async queueRewrap(j: Pick<RewrapJobRow, 'id' | 'batch_id' | 'key_registry_id' | 'chunk_id' | 'from_version'>): Promise<boolean> {
    const r = await this.db`insert into log_rewrap_jobs (tenant_id, id, batch_id, key_registry_id, chunk_id, from_version)
      values (${this.tenantId}, ${j.id}, ${j.batch_id}, ${j.key_registry_id}, ${j.chunk_id}, ${j.from_version})
      on conflict (tenant_id, chunk_id) where status in ('queued', 'running') do nothing`;
    return r.count > 0;
  }
  async rewrapJob(id: string): Promise<RewrapJobRow | null> {
    const [j] = await this.db<RewrapJobRow[]>`select * from log_rewrap_jobs where tenant_id = ${this.tenantId} and id = ${id}`;
    return j ?? null;
  }
  rewrapBatch(batchId: string): Promise<RewrapJobRow[]> {
    return this.db<RewrapJobRow[]>`select * from log_rewrap_jobs where tenant_id = ${this.tenantId} and batch_id = ${batchId} order by created_at, id`;
  }
  async setRewrapStatus(id: string, status: RewrapJobRow['status'], p: { toVersion?: number; error?: string | null } = {}): Promise<void> {
    await this.db`update log_rewrap_jobs set status = ${status}, to_version = coalesce(${p.toVersion ?? null}, to_version), error = ${p.error ?? null}, updated_at = now_ms()
      where tenant_id = ${this.tenantId} and id = ${id}`;
  }
}
