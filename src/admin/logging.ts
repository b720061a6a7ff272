import type { Deps } from '../deps.js';
import { Conflict, Forbidden, NotFound, ValidationError } from '../errors.js';
import type { Route } from '../http/types.js';
import { readChunk } from '../logging/archive.js';
import { applyCredentialChanges, retireOverdue, safeRelativeDir, storeCredential } from '../logging/destinations.js';
import { decide, type CredentialEvent } from '../logging/credential-states.js';
import { retireIfUnused, rotateRegistry } from '../logging/rewrap.js';
import { decodeCursor, page } from '../store/cursor.js';
import { generateSecret } from '../webhooks/secret-box.js';
import { obviouslyPrivate } from '../webhooks/url-safety.js';
import { newId } from '../store/ids.js';
import { TenantStore } from '../store/index.js';
import { type Backlog, type ChunkRow, type CredentialRow, type DeliveryRow, type DestinationRow, type KeyRegistryRow, type LogArchiveRepository } from '../store/log-archive.js';
import { archiveQueries } from '../cross-tenant/log-archive.js';
import { moveChunksOff } from '../logging/relocate.js';
import { TenantRepository } from '../store/tenants.js';
import type { AdminContext } from './types.js';
import { adminRoute, found } from './route.js';

const READ = 'admin:logging:read';
const WRITE = 'admin:logging:write';
const n = (v: number | string | null | undefined) => (v === null || v === undefined ? null : Number(v));

const destinationNotFound = () => new NotFound('not_found', 'No such destination.');
const chunkNotFound = () => new NotFound('not_found', 'No such log chunk.');
const registryNotFound = () => new NotFound('not_found', 'No such key registry.');

/**
 * The tenant a list reads: the caller's, or the one named by `tenant_id` / `filter[tenant_id]`, which
 * only platform administrators may name (anyone else naming another tenant is 403).
 */
export function listTenant(ctx: AdminContext, q: { tenant_id?: string | undefined; 'filter[tenant_id]'?: string | undefined }): string {
  const a = q.tenant_id;
  const b = q['filter[tenant_id]'];
  if (a !== undefined && b !== undefined && a !== b) throw new ValidationError({ tenant_id: ['differs from filter[tenant_id]'] });
  const named = a ?? b;
  if (named === undefined || named === ctx.tenantId) return ctx.tenantId;
  if (!ctx.platform) throw new Forbidden('forbidden', 'You may only read your own tenant.');
  return named;
}

function credentialView(c: CredentialRow) {
  return { version: c.version, status: c.status, backend: c.backend, content_type: c.content_type, created_at: Number(c.created_at),
    activated_at: n(c.activated_at), retire_after: n(c.retire_after), retired_at: n(c.retired_at) };
}

const NO_BACKLOG: Backlog = { pending: 0, oldest_pending_at: null, next_attempt_at: null, attempts: 0, last_error: null, last_status: null };

/** `backlog`: an http_sink's deliveries still owed (null for a filesystem destination, whose copies are written with the chunk). */
function destinationView(d: DestinationRow, creds: CredentialRow[], backlog?: Backlog) {
  return {
    id: d.id, tenant_id: d.tenant_id, scope: d.scope, kind: d.kind, name: d.name, directory: d.kind === 'filesystem' ? d.config.directory ?? `dest-${d.id}` : null,
    url: d.config.url ?? null, enabled: d.enabled, health: d.health, health_detail: d.health_detail, health_checked_at: n(d.health_checked_at),
    rotation_state: d.rotation_state, credential_versions: creds.map(credentialView), created_at: Number(d.created_at), updated_at: Number(d.updated_at),
    backlog: d.kind === 'http_sink' ? backlog ?? NO_BACKLOG : null,
  };
}

function mutationResult(d: DestinationRow, creds: CredentialRow[]) {
  const v = (s: CredentialRow['status']) => creds.filter((c) => c.status === s).map((c) => c.version).pop() ?? null;
  return { result: { destination_id: d.id, rotation_state: d.rotation_state, current_version: v('current'), next_version: v('next'), previous_version: v('previous'), credential_versions: creds.map(credentialView) } };
}

/**
 * A catalog entry: `location` is the directory (relative to LOG_ARCHIVE_DIR) its object was written to;
 * `deliveries` its filesystem copies, then per http_sink the delivery of its current object.
 */
function chunkView(c: ChunkRow, sinkRows: DeliveryRow[]) {
  const fsCopies = c.delivered.map((e) => ({ destination_id: e.destination_id, ok: e.ok, ...(e.status !== undefined ? { status: e.status } : {}), ...(e.error ? { error: e.error } : {}) }));
  const sinks = sinkRows.filter((r) => r.chunk_id === c.id && r.object_key === c.object_key).map((r) => ({
    destination_id: r.destination_id, ok: r.status === 'delivered', ...(r.last_status !== null ? { status: r.last_status } : {}), ...(r.last_error ? { error: r.last_error } : {}),
    attempts: r.attempts, ...(r.status === 'pending' ? { next_attempt_at: Number(r.next_attempt_at) } : {}), ...(r.delivered_at !== null ? { delivered_at: Number(r.delivered_at) } : {}),
  }));
  return {
    id: c.id, tenant_id: c.tenant_id, log_type: c.log_type, plane: c.plane, hour_start: Number(c.hour_start), status: c.status, record_count: c.record_count,
    byte_count: n(c.byte_count), sha256: c.sha256, key_registry_id: c.key_registry_id, key_version: c.key_version, object_key: c.object_key,
    destination_id: c.destination_id, location: c.object_dir, deliveries: [...fsCopies, ...sinks], created_at: Number(c.created_at), committed_at: n(c.committed_at),
  };
}

async function registryView(repo: LogArchiveRepository, r: KeyRegistryRow) {
  const counts = await repo.chunkCountsByVersion(r.id);
  return {
    id: r.id, tenant_id: r.tenant_id, log_type: r.log_type, plane: r.plane, active_version: r.active_version, created_at: Number(r.created_at), updated_at: Number(r.updated_at),
    versions: (await repo.versions(r.id)).map((v) => ({ version: v.version, status: v.status, chunk_count: counts.get(v.version) ?? 0, created_at: Number(v.created_at), updated_at: Number(v.updated_at) })),
  };
}

/** Log archive administration (issue 13): logging settings, destinations and their credentials, chunks, key registries, rewrap jobs. */
export function loggingRoutes(deps: Deps): Route[] {
  const { config } = deps;

  async function mustDestination(repo: LogArchiveRepository, id: string, lock = false): Promise<DestinationRow> {
    const d = found(await repo.destination(id, lock), destinationNotFound);
    if (await retireOverdue(repo, d, Date.now())) return (await repo.destination(id, lock))!;
    return d;
  }

  /**
   * Decides `event` for a destination (locked, overdue credentials retired first) and writes the
   * decision's credential changes; 409 when the move needs a prepared credential and none is.
   */
  async function rotate(repo: LogArchiveRepository, id: string, event: CredentialEvent) {
    const d = await mustDestination(repo, id, true);
    const decision = decide({ rotation_state: d.rotation_state, credentials: await repo.credentials(d.id) }, event);
    if (decision.kind === 'refused') throw new Conflict('conflict', 'No credential is prepared.');
    await applyCredentialChanges(repo, d.id, decision.changes);
    return { d, decision };
  }

  /** The filesystem destination named by `move_to`: enabled, not the one leaving, and able to hold its chunks (a platform destination's chunks only on a platform one). */
  async function moveTo(repo: LogArchiveRepository, leaving: DestinationRow, id: string): Promise<DestinationRow> {
    const to = id === leaving.id ? null : await repo.destination(id);
    if (!to || to.kind !== 'filesystem' || !to.enabled || (leaving.scope === 'platform' && to.scope !== 'platform')) {
      throw new ValidationError({ move_to: [leaving.scope === 'platform' ? 'must name another enabled platform filesystem destination' : 'must name another enabled filesystem destination of the tenant'] });
    }
    return to;
  }

  function checkDestination(v: { kind?: string; directory?: string | undefined; url?: string | undefined }): void {
    const details: Record<string, string[]> = {};
    if (v.directory !== undefined && !safeRelativeDir(v.directory)) details.directory = ['must be a relative directory under the archive directory, without ..'];
    if (v.kind === 'http_sink' && v.url === undefined) details.url = ['is required for an http_sink'];
    if (v.kind === 'filesystem' && v.url !== undefined) details.url = ['is only for an http_sink'];
    if (v.kind === 'http_sink' && v.directory !== undefined) details.directory = ['is only for a filesystem destination'];
    if (v.url !== undefined && !config.webhookAllowPrivate && obviouslyPrivate(v.url)) details.url = ['must not point to a private, loopback or link-local address'];
    if (Object.keys(details).length) throw new ValidationError(details);
  }

  const tags = ['logging'];
  return [
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/logging-policies/settings', permission: READ, tags,
      summary: 'The tenant\'s logging policy settings (whether token decisions are archived)', response: { 200: 'admin.logging-settings' },
      handler: async ({ deps, ctx }) => {
        const t = await new TenantRepository(deps.sql, ctx.tenantId).get();
        return { body: { tenant_id: ctx.tenantId, token_decision_logging: (t?.settings as { token_decision_logging?: boolean } | undefined)?.token_decision_logging === true } };
      },
    }),
    adminRoute(deps, {
      method: 'PUT', path: '/api/admin/logging-policies/settings', permission: WRITE, tags, body: 'admin.logging-settings-update',
      summary: 'Turn archiving of token decisions (bulk lane) on or off for the tenant', response: { 200: 'admin.logging-settings' }, errors: [404],
      audit: { action: 'logging_settings.update', resourceType: 'logging_settings' },
      handler: async ({ deps, ctx, body, mutate }) => {
        await mutate(async (tx) => {
          const repo = new TenantRepository(tx, ctx.tenantId);
          const t = found(await repo.lock(), () => new NotFound('not_found', 'No such tenant.'));
          const before = (t.settings as { token_decision_logging?: boolean }).token_decision_logging === true;
          await repo.update({ settings: { ...t.settings, token_decision_logging: body.token_decision_logging } });
          return { result: null, resourceId: ctx.tenantId, before: { token_decision_logging: before }, after: { token_decision_logging: body.token_decision_logging } };
        });
        await deps.tokens.tenantSettings.changed(ctx.tenantId, deps.trace);
        return { body: { tenant_id: ctx.tenantId, token_decision_logging: body.token_decision_logging } };
      },
    }),

    // --- destinations ---
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/destinations', permission: READ, tags, query: 'query.log-tenant-list',
      summary: 'List a tenant\'s log destinations', response: { 200: 'admin.destination-list' },
      handler: async ({ deps, ctx, query }) => {
        const repo = deps.store.forTenant(listTenant(ctx, query)).logArchive;
        const p = page(await repo.destinations({ limit: query.limit, cursor: decodeCursor(query.cursor) }), query.limit);
        const backlogs = await archiveQueries.backlogs(deps.sql, p.items);
        return { body: { items: await Promise.all(p.items.map(async (d) => destinationView(d, await repo.credentials(d.id), backlogs.get(d.id)))), cursor: p.next } };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/destinations', permission: WRITE, tags, body: 'admin.destination-create',
      summary: 'Create a log destination (platform scope: platform administrators only); an http_sink\'s generated credential is shown once', response: { 201: 'admin.destination-created' },
      audit: { action: 'log_destination.create', resourceType: 'log_destination' },
      handler: async ({ ctx, body, mutate }) => {
        const scope = body.scope ?? 'tenant';
        if (scope === 'platform' && !ctx.platform) throw new Forbidden('forbidden', 'Only platform administrators may create platform destinations.');
        checkDestination(body);
        if (body.kind === 'filesystem' && body.secret !== undefined) throw new ValidationError({ secret: ['is only for an http_sink'] });
        const id = newId('ldst');
        const secret = body.kind === 'http_sink' ? body.secret ?? generateSecret() : undefined;
        const out = await mutate(async (_tx, store) => {
          const repo = store.logArchive;
          const d = await repo.insertDestination({ id, scope, kind: body.kind, name: body.name, enabled: body.enabled ?? true,
            config: { ...(body.directory ? { directory: body.directory } : {}), ...(body.url ? { url: body.url } : {}), ...(body.timeout_ms ? { timeout_ms: body.timeout_ms } : {}) } });
          if (secret !== undefined) {
            const stored = await storeCredential(config, ctx.tenantId, id, 1, 'encrypted_table', secret);
            await repo.insertCredential({ destination_id: id, version: 1, status: 'current', backend: 'encrypted_table', content_type: null, ...stored });
          }
          const view = destinationView(d, await repo.credentials(id));
          return { result: view, resourceId: id, after: view };
        });
        return { status: 201, body: { destination: out, ...(body.kind === 'http_sink' && body.secret === undefined ? { secret } : {}) } };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/destinations/:id', permission: READ, tags,
      summary: 'Get a log destination', response: { 200: 'admin.destination' }, errors: [404],
      handler: async ({ deps, store, params }) => {
        const d = await mustDestination(store.logArchive, params.id!);
        const backlogs = await archiveQueries.backlogs(deps.sql, [d]);
        return { body: destinationView(d, await store.logArchive.credentials(d.id), backlogs.get(d.id)) };
      },
    }),
    adminRoute(deps, {
      method: 'PATCH', path: '/api/admin/destinations/:id', permission: WRITE, tags, body: 'admin.destination-update',
      summary: 'Change a log destination', response: { 200: 'admin.destination' }, errors: [404],
      audit: { action: 'log_destination.update', resourceType: 'log_destination' },
      handler: async ({ body, params, mutate }) => {
        const out = await mutate(async (_tx, store) => {
          const repo = store.logArchive;
          const cur = await mustDestination(repo, params.id!, true);
          checkDestination({ kind: cur.kind, directory: body.directory, url: body.url });
          const next = (await repo.updateDestination(cur.id, { name: body.name, enabled: body.enabled,
            config: body.directory || body.url || body.timeout_ms ? { ...cur.config, ...(body.directory ? { directory: body.directory } : {}), ...(body.url ? { url: body.url } : {}), ...(body.timeout_ms ? { timeout_ms: body.timeout_ms } : {}) } : undefined }))!;
          const creds = await repo.credentials(cur.id);
          return { result: destinationView(next, creds), before: destinationView(cur, creds), after: destinationView(next, creds) };
        });
        return { body: out };
      },
    }),
    adminRoute(deps, {
      method: 'DELETE', path: '/api/admin/destinations/:id', permission: WRITE, tags, query: 'query.destination-delete',
      summary: 'Delete a log destination; one that holds chunks is 409 unless move_chunks=true (their objects move to move_to, else to where new chunks go)',
      response: { 204: null }, errors: [404, 409],
      audit: { action: 'log_destination.delete', resourceType: 'log_destination', severity: 'warn' },
      handler: async ({ deps, store, params, query, mutate }) => {
        const d = await mustDestination(store.logArchive, params.id!);
        const move = query.move_chunks === true && d.kind === 'filesystem';
        if (query.move_to !== undefined && !move) throw new ValidationError({ move_to: ['is only for move_chunks=true on a filesystem destination'] });
        const to = move && query.move_to !== undefined ? await moveTo(store.logArchive, d, query.move_to) : null;
        const moveCtx = { sql: deps.sql, store: deps.store, config };
        // The bulk of the chunks move before the destination is locked (archive commits onto it go on meanwhile).
        let moved = move ? await moveChunksOff(moveCtx, d, to) : 0;
        await mutate(async (tx, s) => {
          // Locked: a commit onto this destination waits, then finds it gone and writes its chunk elsewhere.
          const cur = await mustDestination(s.logArchive, d.id, true);
          if (move) moved += await moveChunksOff(moveCtx, cur, to);
          const held = await archiveQueries.countHeldBy(tx, cur);
          if (held > 0) throw new Conflict('conflict', `The destination holds ${held} chunk(s); delete it with move_chunks=true (optionally move_to=<filesystem destination id>) to move them first.`);
          const before = destinationView(cur, await s.logArchive.credentials(cur.id));
          const dropped = await archiveQueries.dropDeliveries(tx, cur);
          await s.logArchive.deleteDestination(cur.id);
          return { result: null, before, metadata: { chunks_moved: moved, deliveries_dropped: dropped, ...(to ? { moved_to: to.id } : {}) } };
        });
        return { status: 204 };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/destinations/:id/credentials/prepare', permission: WRITE, tags, body: 'admin.destination-credential-prepare',
      summary: 'Store the next credential sealed in the secret backend and mark the rotation prepared', response: { 200: 'admin.destination-mutation-result' }, errors: [404],
      audit: { action: 'log_destination.credential_prepare', resourceType: 'log_destination', severity: 'warn' },
      handler: async ({ ctx, body, params, mutate }) => {
        const given = (['secret_value', 'credential_value', 'plaintext'] as const).filter((k) => body[k] !== undefined);
        if (given.length !== 1) {
          const msg = given.length ? 'only one of secret_value, credential_value, plaintext may be given' : 'exactly one of secret_value, credential_value, plaintext is required';
          throw new ValidationError({ secret_value: [msg], credential_value: [msg], plaintext: [msg] });
        }
        const secret = body[given[0]!]!;
        const backend = body.backend ?? 'encrypted_object_store';
        const out = await mutate(async (_tx, store) => {
          const repo = store.logArchive;
          const { d, decision } = await rotate(repo, params.id!, { kind: 'prepare' });
          const version = decision.insert!;
          const stored = await storeCredential(config, ctx.tenantId, d.id, version, backend, secret);
          await repo.insertCredential({ destination_id: d.id, version, status: 'next', backend, content_type: body.content_type ?? null, ...stored });
          const next = (await repo.updateDestination(d.id, { rotation_state: decision.rotation_state! }))!;
          const res = mutationResult(next, await repo.credentials(d.id));
          return { result: res, metadata: { version, backend, field: given[0] }, after: res.result };
        });
        return { body: out };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/destinations/:id/credentials/activate', permission: WRITE, tags,
      summary: 'Make the prepared credential current; the previous one stays valid for the overlap (LOG_CREDENTIAL_OVERLAP_MS, 24 h), then is retired', response: { 200: 'admin.destination-mutation-result' }, errors: [404, 409],
      audit: { action: 'log_destination.credential_activate', resourceType: 'log_destination', severity: 'warn' },
      handler: async ({ params, mutate }) => {
        const out = await mutate(async (_tx, store) => {
          const repo = store.logArchive;
          const { d, decision } = await rotate(repo, params.id!, { kind: 'activate', now: Date.now(), overlapMs: config.logCredentialOverlapMs });
          const row = (await repo.updateDestination(d.id, { rotation_state: decision.rotation_state! }))!;
          const res = mutationResult(row, await repo.credentials(d.id));
          return { result: res, metadata: { version: decision.changes.find((c) => c.status === 'current')!.version }, after: res.result };
        });
        return { body: out };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/destinations/:id/credentials/abort', permission: WRITE, tags,
      summary: 'Discard the prepared credential', response: { 200: 'admin.destination-mutation-result' }, errors: [404, 409],
      audit: { action: 'log_destination.credential_abort', resourceType: 'log_destination' },
      handler: async ({ params, mutate }) => {
        const out = await mutate(async (_tx, store) => {
          const repo = store.logArchive;
          const { d, decision } = await rotate(repo, params.id!, { kind: 'abort' });
          const row = (await repo.updateDestination(d.id, { rotation_state: decision.rotation_state! }))!;
          const res = mutationResult(row, await repo.credentials(d.id));
          return { result: res, metadata: { version: decision.changes[0]!.version }, after: res.result };
        });
        return { body: out };
      },
    }),

    // --- chunks ---
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/admin-logging/chunks', permission: READ, tags, query: 'query.log-tenant-list',
      summary: 'List a tenant\'s archived log chunks (the object catalog), newest first', response: { 200: 'admin.log-chunk-list' },
      handler: async ({ deps, ctx, query }) => {
        const repo = deps.store.forTenant(listTenant(ctx, query)).logArchive;
        const p = page(await repo.chunks({ limit: query.limit, cursor: decodeCursor(query.cursor), status: query.status, log_type: query.log_type }), query.limit);
        const sinkRows = await repo.deliveriesOf(p.items.map((c) => c.id));
        return { body: { items: p.items.map((c) => chunkView(c, sinkRows)), cursor: p.next } };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/admin-logging/chunks/:id/download', permission: READ, tags,
      summary: 'Download a committed chunk decrypted, as NDJSON (audited)', response: { 200: null }, errors: [404, 409],
      audit: { action: 'log_chunk.download', resourceType: 'log_chunk', severity: 'warn' },
      handler: async ({ store, params, mutate }) => {
        const c = found(await store.logArchive.chunk(params.id!), chunkNotFound);
        if (c.status !== 'committed') throw new Conflict('conflict', 'The chunk is not committed yet.');
        const { plain } = await readChunk(config, store.logArchive, c);
        await mutate(async () => ({ result: null, metadata: { records: c.record_count, bytes: plain.length, key_version: c.key_version, sha256: c.sha256 } }));
        return { type: 'application/x-ndjson', headers: { 'Cache-Control': 'no-store', 'X-Chunk-Sha256': c.sha256! }, body: plain.toString('utf8') };
      },
    }),

    // --- key registries ---
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/admin-logging/key-registries', permission: READ, tags, query: 'query.log-tenant-list',
      summary: 'List a tenant\'s log key registries and their versions (key material never returned)', response: { 200: 'admin.log-key-registry-list' },
      handler: async ({ deps, ctx, query }) => {
        const repo = deps.store.forTenant(listTenant(ctx, query)).logArchive;
        return { body: { items: await Promise.all((await repo.registries()).map((r) => registryView(repo, r))) } };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/admin-logging/key-registries/:id', permission: READ, tags,
      summary: 'Get a log key registry', response: { 200: 'admin.log-key-registry' }, errors: [404],
      handler: async ({ store, params }) => ({ body: await registryView(store.logArchive, found(await store.logArchive.registry(params.id!), registryNotFound)) }),
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/admin-logging/key-registries/:id/rotate', permission: WRITE, tags,
      summary: 'Rotate a registry\'s key: a new active version; the old one is rewrap_required when chunks use it, else retired', response: { 200: 'admin.log-key-registry' }, errors: [404],
      audit: { action: 'log_key.rotate', resourceType: 'log_key_registry', severity: 'warn' },
      handler: async ({ ctx, params, mutate }) => {
        const out = await mutate(async (_tx, store) => {
          found(await store.logArchive.registry(params.id!, true), registryNotFound);
          const r = await rotateRegistry(config, store.logArchive, ctx.tenantId, params.id!);
          return { result: await registryView(store.logArchive, (await store.logArchive.registry(params.id!))!), metadata: r };
        });
        return { body: out };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/admin-logging/key-registries/:id/versions/:version/compromise', permission: WRITE, tags,
      summary: 'Mark a key version compromised (an active one is rotated first); its chunks are rewrapped first', response: { 200: 'admin.log-key-registry' }, errors: [404, 409],
      audit: { action: 'log_key.compromise', resourceType: 'log_key_registry', severity: 'critical' },
      handler: async ({ ctx, params, mutate }) => {
        const version = Number(params.version);
        if (!Number.isSafeInteger(version) || version < 1) throw new ValidationError({ version: ['must be an integer >= 1'] });
        const out = await mutate(async (_tx, store) => {
          const repo = store.logArchive;
          const reg = found(await repo.registry(params.id!, true), registryNotFound);
          const v = found(await repo.version(reg.id, version), () => new NotFound('not_found', 'No such key version.'));
          if (v.status === 'retired') throw new Conflict('conflict', 'A retired version protects no chunk.');
          const rotated = v.status === 'active' ? await rotateRegistry(config, repo, ctx.tenantId, reg.id) : null;
          await repo.setVersionStatus(reg.id, version, 'compromised');
          const retired = await retireIfUnused(repo, reg.id, version);
          return { result: await registryView(repo, (await repo.registry(reg.id))!), metadata: { version, rotated: rotated?.to ?? null, retired_unused: retired } };
        });
        return { body: out };
      },
    }),

    // --- rewrap ---
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/admin-logging/rewrap-jobs', permission: WRITE, tags, body: 'admin.log-rewrap-request',
      summary: 'Queue rewrap jobs for committed chunks on stale or compromised key versions (compromised first, de-duplicated)', response: { 200: 'admin.log-rewrap-created' }, errors: [404],
      audit: { action: 'log_rewrap.create', resourceType: 'log_rewrap_batch' },
      handler: async ({ deps, ctx, body, mutate }) => {
        // A platform administrator may name any tenant's registry; anyone else only their own tenant's (another's is not found).
        const owner = ctx.platform ? (await archiveQueries.registryTenant(deps.sql, body.key_registry_id)) ?? ctx.tenantId : ctx.tenantId;
        const batchId = newId('lrwb');
        const auditId = newId('aud');
        const limit = body.limit ?? 100;
        const queued: string[] = [];
        const out = await mutate(async (tx) => {
          const repo = new TenantStore(tx, owner, deps.store.pii).logArchive;
          const reg = found(await repo.registry(body.key_registry_id), registryNotFound);
          const candidates = await repo.rewrapCandidates(reg.id, body.from_version);
          let skipped = candidates.filter((c) => c.open).length;
          const fresh = candidates.filter((c) => !c.open);
          for (const c of fresh.slice(0, limit)) {
            const id = newId('lrw');
            if (await repo.queueRewrap({ id, batch_id: batchId, key_registry_id: reg.id, chunk_id: c.id, from_version: c.key_version })) queued.push(id);
            else skipped++;
          }
          const result = { queued: queued.length, skipped_duplicates: skipped, candidates_left: Math.max(0, fresh.length - limit), key_registry_id: reg.id, tenant_id: owner, active_version: reg.active_version };
          return { result, resourceId: batchId, auditId, metadata: { ...result, from_version: body.from_version ?? null, limit } };
        });
        // After commit; if Redis is away the log worker's sweep adds them (the job id de-duplicates).
        await (queued.length ? deps.jobs.addBulk('log-rewrap', queued.map((id) => ({ data: { tenantId: owner, jobId: id }, opts: { jobId: id } }))) : Promise.resolve([]))
          .catch((err: Error) => deps.log.warn({ err: err.message }, 'rewrap jobs not enqueued; the log worker will'));
        return { body: { result: out, audit_id: auditId, job_id: batchId } };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/admin-logging/rewrap-jobs/:id', permission: READ, tags,
      summary: 'The rewrap jobs of one creation (job_id) and their status', response: { 200: 'admin.log-rewrap-batch' }, errors: [404],
      handler: async ({ store, params }) => {
        const jobs = await store.logArchive.rewrapBatch(params.id!);
        if (!jobs.length) throw new NotFound('not_found', 'No such rewrap job.');
        return { body: { job_id: params.id!, tenant_id: store.tenantId, jobs: jobs.map((j) => ({ id: j.id, chunk_id: j.chunk_id, key_registry_id: j.key_registry_id, from_version: j.from_version, to_version: j.to_version, status: j.status, error: j.error, created_at: Number(j.created_at), updated_at: Number(j.updated_at) })) } };
      },
    }),
  ];
}
