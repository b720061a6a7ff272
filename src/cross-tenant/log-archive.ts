import type { Db, Sql, TxSql } from '../sql.js';
import type { Backlog, ChunkRow, DeliveryRow, DestinationRow } from '../store/log-archive.js';
import { TOMBSTONE_STATUSES } from '../store/tenants.js';

/**
 * Queries of the log worker, which is one per deployment: it chunks the records of every tenant, and a
 * platform destination holds chunks of every tenant, so these read across tenants; every row they
 * return names its tenant, and what is done to one tenant's rows goes through its LogArchiveRepository.
 */
export const archiveQueries = {
  /** Claims up to `limit` unclaimed records for new pending chunks, grouped by (tenant, log_type, plane, hour). */
  async claim(tx: TxSql, limit: number, newChunkId: () => string): Promise<number> {
    // Records of a tenant that no longer exists or is tombstoned (deleting, deleted: written by a process
    // that had not heard of the deletion yet) go with it, never into a chunk.
    const tombstoned = TOMBSTONE_STATUSES as string[];
    await tx`delete from log_records r where r.chunk_id is null
      and not exists (select 1 from tenants t where t.id = r.tenant_id and t.status <> all(${tombstoned}::text[]))`;
    const rows = await tx<Array<{ tenant_id: string; id: string; log_type: string; plane: string; ts: string }>>`
      select r.tenant_id, r.id, r.log_type, r.plane, r.ts from log_records r where r.chunk_id is null
        and exists (select 1 from tenants t where t.id = r.tenant_id and t.status <> all(${tombstoned}::text[]))
      order by r.id limit ${limit} for update of r skip locked`;
    const groups = new Map<string, { tenantId: string; logType: string; plane: string; hour: number; ids: string[] }>();
    for (const r of rows) {
      const hour = Math.floor(Number(r.ts) / 3_600_000) * 3_600_000;
      const k = `${r.tenant_id}\u0000${r.log_type}\u0000${r.plane}\u0000${hour}`;
      let g = groups.get(k);
      if (!g) groups.set(k, (g = { tenantId: r.tenant_id, logType: r.log_type, plane: r.plane, hour, ids: [] }));
      g.ids.push(String(r.id));
    }
    for (const g of groups.values()) {
      const id = newChunkId();
      await tx`insert into log_chunks (tenant_id, id, log_type, plane, hour_start, status, record_count)
        values (${g.tenantId}, ${id}, ${g.logType}, ${g.plane}, ${g.hour}, 'pending', ${g.ids.length})`;
      await tx`update log_records set chunk_id = ${id} where tenant_id = ${g.tenantId} and id = any(${g.ids}::bigint[])`;
    }
    return rows.length;
  },
  /** Pending chunks, oldest first (a crashed run's chunks included). */
  pending(sql: Sql, limit: number): Promise<Array<{ tenant_id: string; id: string }>> {
    return sql`select tenant_id, id from log_chunks where status = 'pending' order by created_at, id limit ${limit}` as never;
  },
  /** Enabled platform-scope destinations (they receive every tenant's chunks). */
  platformDestinations(sql: Db): Promise<DestinationRow[]> {
    return sql<DestinationRow[]>`select * from log_destinations where scope = 'platform' and enabled order by created_at, id`;
  },
  /** Every enabled destination, for the periodic health check. */
  allDestinations(sql: Sql): Promise<DestinationRow[]> {
    return sql<DestinationRow[]>`select * from log_destinations where enabled order by tenant_id, id`;
  },
  /**
   * Committed chunks held by a destination. A platform destination holds chunks of every tenant; a
   * tenant's destination only its own tenant's.
   */
  chunksHeldBy(sql: Db, d: Pick<DestinationRow, 'tenant_id' | 'id' | 'scope'>, limit: number): Promise<ChunkRow[]> {
    return sql<ChunkRow[]>`select * from log_chunks where destination_id = ${d.id} and status = 'committed'
      ${d.scope === 'tenant' ? sql`and tenant_id = ${d.tenant_id}` : sql``} order by tenant_id, created_at, id limit ${limit}`;
  },
  /** How many committed chunks a destination holds: a platform destination holds chunks of every tenant. */
  async countHeldBy(sql: Db, d: Pick<DestinationRow, 'tenant_id' | 'id' | 'scope'>): Promise<number> {
    const [r] = await sql<Array<{ n: number }>>`select count(*)::int as n from log_chunks where destination_id = ${d.id} and status = 'committed'
      ${d.scope === 'tenant' ? sql`and tenant_id = ${d.tenant_id}` : sql``}`;
    return r!.n;
  },
  /** Moves a chunk's catalog entry to where its object was copied, if it is still where the mover read it (compare-and-swap). */
  async relocate(sql: Db, c: Pick<ChunkRow, 'tenant_id' | 'id' | 'object_dir' | 'object_key' | 'destination_id'>, to: { destinationId: string | null; dir: string }): Promise<boolean> {
    // The store it leaves no longer holds it, as catalog object or copy.
    const r = await sql`update log_chunks set destination_id = ${to.destinationId}, object_dir = ${to.dir},
        delivered = coalesce((select jsonb_agg(e) from jsonb_array_elements(delivered) e where e->>'destination_id' is distinct from ${c.destination_id}), '[]')
      where tenant_id = ${c.tenant_id} and id = ${c.id} and status = 'committed' and object_dir = ${c.object_dir} and object_key = ${c.object_key}`;
    return r.count > 0;
  },
  /** Deletes a sink's deliveries (its destination is being deleted); answers how many were still pending. */
  async dropDeliveries(sql: Db, d: Pick<DestinationRow, 'tenant_id' | 'id' | 'scope'>): Promise<number> {
    const rows = await sql<Array<{ status: string }>>`delete from log_deliveries where destination_id = ${d.id}
      ${d.scope === 'tenant' ? sql`and tenant_id = ${d.tenant_id}` : sql``} returning status`;
    return rows.filter((r) => r.status === 'pending').length;
  },
  /** The backlog of each of some destinations (a platform sink's across tenants). */
  async backlogs(sql: Db, ds: Array<Pick<DestinationRow, 'tenant_id' | 'id' | 'scope' | 'kind'>>): Promise<Map<string, Backlog>> {
    const sinks = ds.filter((d) => d.kind === 'http_sink');
    const out = new Map<string, Backlog>();
    if (!sinks.length) return out;
    const own = sinks.filter((d) => d.scope === 'tenant');
    const platform = sinks.filter((d) => d.scope === 'platform').map((d) => d.id);
    const rows = await sql<Array<{ destination_id: string; pending: number; oldest: string | null; next: string | null; attempts: number }>>`
      select destination_id, count(*)::int as pending, min(created_at) as oldest, min(next_attempt_at) as next, max(attempts)::int as attempts
        from log_deliveries
        where status = 'pending' and (
          (tenant_id, destination_id) in (select * from unnest(${own.map((d) => d.tenant_id)}::text[], ${own.map((d) => d.id)}::text[]))
          or destination_id = any(${platform}::text[]))
        group by destination_id`;
    const last = await sql<Array<{ destination_id: string; last_error: string | null; last_status: number | null }>>`
      select distinct on (destination_id) destination_id, last_error, last_status from log_deliveries
        where destination_id = any(${sinks.map((d) => d.id)}::text[]) and last_attempt_at is not null
          and (destination_id = any(${platform}::text[]) or (tenant_id, destination_id) in (select * from unnest(${own.map((d) => d.tenant_id)}::text[], ${own.map((d) => d.id)}::text[])))
        order by destination_id, last_attempt_at desc, id desc`;
    const lastOf = new Map(last.map((r) => [r.destination_id, r]));
    for (const d of sinks) {
      const r = rows.find((x) => x.destination_id === d.id);
      const l = lastOf.get(d.id);
      out.set(d.id, {
        pending: r?.pending ?? 0, oldest_pending_at: r?.oldest ? Number(r.oldest) : null, next_attempt_at: r?.next ? Number(r.next) : null,
        attempts: r?.attempts ?? 0, last_error: l?.last_error ?? null, last_status: l?.last_status ?? null,
      });
    }
    return out;
  },
  /** Enabled http_sinks with deliveries due now. */
  dueSinks(sql: Db, now: number): Promise<DestinationRow[]> {
    return sql<DestinationRow[]>`select d.* from log_destinations d where d.kind = 'http_sink' and d.enabled and exists (
        select 1 from log_deliveries l where l.destination_id = d.id and l.status = 'pending' and l.next_attempt_at <= ${now}
          and (d.scope = 'platform' or l.tenant_id = d.tenant_id))
      order by d.id`;
  },
  /**
   * Claims a sink's oldest due delivery: one attempt more, and its next attempt pushed `leaseMs` ahead, so
   * another worker leaves it alone while this one sends it and a worker that dies mid-attempt leaves it due again.
   */
  async claimDelivery(sql: Db, d: Pick<DestinationRow, 'tenant_id' | 'id' | 'scope'>, now: number, leaseMs: number): Promise<DeliveryRow | null> {
    const [row] = await sql<DeliveryRow[]>`update log_deliveries set attempts = attempts + 1, last_attempt_at = ${now}, next_attempt_at = ${now + leaseMs}
      where (tenant_id, id) = (select tenant_id, id from log_deliveries where destination_id = ${d.id} and status = 'pending' and next_attempt_at <= ${now}
          ${d.scope === 'tenant' ? sql`and tenant_id = ${d.tenant_id}` : sql``}
        order by id limit 1 for update skip locked)
      returning *`;
    return row ?? null;
  },
  /** Records an attempt's outcome; a failure pushes every pending delivery of the sink back to `retryAt` (the sink is down, not the object). */
  async deliveryOutcome(sql: Sql, row: Pick<DeliveryRow, 'tenant_id' | 'id' | 'destination_id'>, d: Pick<DestinationRow, 'tenant_id' | 'scope'>,
    r: { ok: true; status: number | null } | { ok: false; status: number | null; error: string; retryAt: number } | { superseded: true }): Promise<void> {
    await sql.begin(async (tx) => {
      if ('superseded' in r) {
        await tx`update log_deliveries set status = 'superseded' where tenant_id = ${row.tenant_id} and id = ${row.id}`;
      } else if (r.ok) {
        await tx`update log_deliveries set status = 'delivered', delivered_at = now_ms(), last_status = ${r.status}, last_error = null
          where tenant_id = ${row.tenant_id} and id = ${row.id} and status = 'pending'`;
      } else {
        await tx`update log_deliveries set next_attempt_at = ${r.retryAt}, last_status = ${r.status}, last_error = ${r.error.slice(0, 200)}
          where tenant_id = ${row.tenant_id} and id = ${row.id}`;
        await tx`update log_deliveries set next_attempt_at = greatest(next_attempt_at, ${r.retryAt})
          where destination_id = ${row.destination_id} and status = 'pending' ${d.scope === 'tenant' ? tx`and tenant_id = ${d.tenant_id}` : tx``}`;
      }
    });
  },
  /** Whether a sink's latest attempt failed (for its health). */
  async lastAttemptFailed(sql: Db, d: Pick<DestinationRow, 'tenant_id' | 'id' | 'scope'>): Promise<boolean> {
    const [r] = await sql<Array<{ failed: boolean }>>`select (status = 'pending' and last_error is not null) as failed from log_deliveries
      where destination_id = ${d.id} and last_attempt_at is not null ${d.scope === 'tenant' ? sql`and tenant_id = ${d.tenant_id}` : sql``}
      order by last_attempt_at desc, id desc limit 1`;
    return r?.failed ?? false;
  },
  /** A destination that serves a tenant's chunks: one of its own, or a platform one. */
  async servingDestination(sql: Db, tenantId: string, id: string): Promise<DestinationRow | null> {
    const [d] = await sql<DestinationRow[]>`select * from log_destinations where id = ${id} and (tenant_id = ${tenantId} or scope = 'platform')`;
    return d ?? null;
  },
  /** A registry by id in any tenant (platform callers). */
  async registryTenant(sql: Sql, registryId: string): Promise<string | null> {
    const [r] = await sql<Array<{ tenant_id: string }>>`select tenant_id from log_key_registries where id = ${registryId}`;
    return r?.tenant_id ?? null;
  },
  /**
   * Rewrap jobs queued or running in Postgres, of every live tenant: the archive pass adds their BullMQ
   * jobs again where one was lost (a tombstoned tenant's purge removes its jobs, so it is left out).
   */
  openRewrapJobs(sql: Sql): Promise<Array<{ tenant_id: string; id: string }>> {
    return sql<Array<{ tenant_id: string; id: string }>>`select j.tenant_id, j.id from log_rewrap_jobs j join tenants t on t.id = j.tenant_id
      where j.status in ('queued', 'running') and t.status <> all(${TOMBSTONE_STATUSES as string[]}::text[]) order by j.created_at limit 1000`;
  },
  /**
   * Whether the last chunk written to an object-store destination failed there. A platform destination
   * holds chunks of every tenant, so the latest write is looked for across tenants.
   */
  async lastWriteFailed(sql: Db, d: Pick<DestinationRow, 'id'>): Promise<boolean> {
    const [last] = await sql<Array<{ ok: boolean }>>`select (e->>'ok')::boolean as ok from log_chunks c, jsonb_array_elements(c.delivered) e
      where c.status = 'committed' and e->>'destination_id' = ${d.id} order by c.committed_at desc limit 1`;
    return last ? !last.ok : false;
  },
  /**
   * Share-locks a destination until the transaction ends (so deleting it waits for the chunk being
   * committed to it); false when it is gone. By id alone: the primary may be a platform destination.
   */
  async lockDestination(tx: TxSql, id: string): Promise<boolean> {
    return (await tx`select 1 from log_destinations where id = ${id} for share`).length > 0;
  },
};
