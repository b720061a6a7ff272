import type { Deps } from '../deps.js';
import { NotFound, ValidationError } from '../errors.js';
import type { Route } from '../http/types.js';
import { abortRotation, advanceRotation, startRotation } from '../pii/lookup-keys/controller.js';
import { liveComponents } from '../pii/lookup-keys/fleet.js';
import { enqueueRotation } from '../pii/lookup-keys/queue.js';
import { lookupHmacRepo as repo, type RotationRow } from '../pii/lookup-keys/repository.js';
import { hasJobWork } from '../pii/lookup-keys/states.js';
import type { Db } from '../sql.js';
import { adminRoute } from './route.js';

const PATH = '/api/admin/platform/control-plane/lookup-hmac/rotations';
const READ = 'admin:control-plane:read';
const WRITE = 'admin:control-plane:write';
const tags = ['control-plane'];
const OPERATION_ID = /^[a-zA-Z0-9][a-zA-Z0-9._:-]*$/;
const audit = (action: string) => ({ action: `lookup_hmac_rotation.${action}`, resourceType: 'lookup_hmac_rotation', severity: 'critical' as const, resourceParam: 'operationId' });

/** The path's operationId as the spec bounds it (1 to 128 characters of the pattern), else 422. */
function operationIdOf(params: Record<string, string>): string {
  const id = params.operationId ?? '';
  if (id.length < 1 || id.length > 128 || !OPERATION_ID.test(id)) {
    throw new ValidationError({ operationId: ['must be 1 to 128 characters matching ^[a-zA-Z0-9][a-zA-Z0-9._:-]*$'] });
  }
  return id;
}

/** The spec's `rotation` object: public key metadata (fingerprints), never key material. */
async function rotationView(db: Db, r: RotationRow, components?: unknown) {
  const key = async (g: number) => {
    const k = (await repo.key(db, g))!;
    return { generation: k.generation, keyId: k.key_id, slot: k.slot, fingerprint: k.fingerprint };
  };
  return {
    rotation: {
      operationId: r.operation_id, state: r.state, source: await key(r.source_generation), candidate: await key(r.candidate_generation),
      checkpoint: r.checkpoint, sourceRowCount: r.source_row_count, currentRowCount: r.current_row_count,
      verificationAttemptCount: r.verification_attempt_count, graceExpiresAt: r.grace_expires_at, ownerId: r.owner_id,
      fencingToken: r.fencing_token, leaseExpiresAt: r.lease_expires_at, mutationStarted: r.mutation_started, updatedAt: r.updated_at,
      createdAt: r.created_at, cutoff: r.cutoff, graceSeconds: Math.floor(r.grace_ms / 1000), blockedReason: r.blocked_reason,
      finished: r.finished_at !== null, finishedAt: r.finished_at,
      ...(components !== undefined ? { components } : {}),
    },
  };
}

/**
 * Lookup-HMAC key rotation (issue 14 item 5), environment-wide and for platform administrators only:
 * start, read (the spec's GET), advance one state, abort. The state machine is src/pii/lookup-keys/states.ts;
 * the moves wait for every process (src/pii/lookup-keys/follower.ts); the reindex runs as a job.
 */
export function lookupHmacRoutes(deps: Deps): Route[] {
  const fleet = { redis: deps.redis, liveMs: deps.config.lookupKeyringLiveMs };
  const components = async () => {
    try {
      return (await liveComponents(deps.redis, deps.config.lookupKeyringLiveMs)).map((a) => ({ id: a.id, role: a.role, operationId: a.operationId, state: a.state, fingerprints: a.fingerprints, lastSeenAt: a.at }));
    } catch { return null; }
  };
  /** Work a move left for the rotation job (reindex, rollback, dropping old entries). */
  const queueWork = async (r: RotationRow) => {
    if (r.finished_at === null && hasJobWork(r.state)) await enqueueRotation(deps.jobs, { operationId: r.operation_id, kind: 'work' });
  };

  return [
    adminRoute(deps, {
      method: 'POST', path: PATH, permission: WRITE, tags, platformOnly: true, body: 'admin.lookup-hmac-rotation-start',
      response: { 201: 'admin.lookup-hmac-rotation', 200: 'admin.lookup-hmac-rotation' }, errors: [409],
      summary: 'Start a lookup-HMAC key rotation (state planned): the candidate is the next generation in the other slot; the operationId makes it idempotent',
      audit: audit('start'),
      handler: async ({ deps, ctx, body, mutate, unchanged }) => {
        const again = await repo.get(deps.sql, body.operationId);
        if (again) { unchanged(); return { status: 200, body: await rotationView(deps.sql, again) }; }
        const started = await mutate(async (tx) => {
          const r = await startRotation(tx, deps.config.keyEncryptionKey, {
            operationId: body.operationId, tenantId: ctx.tenantId, startedBy: ctx.actor.id, keyId: body.keyId, keySource: body.keySource,
            graceMs: (body.graceSeconds ?? deps.config.lookupRotationGraceSeconds) * 1000,
          });
          return { result: r, resourceId: body.operationId, after: (await rotationView(tx, r.row)).rotation };
        });
        return { status: started.created ? 201 : 200, body: await rotationView(deps.sql, started.row) };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: `${PATH}/:operationId`, permission: READ, tags, platformOnly: true,
      response: { 200: 'admin.lookup-hmac-rotation' }, errors: [404],
      summary: 'One lookup-HMAC key rotation: state, keys by fingerprint, checkpoint, counts, lease and the processes that apply it',
      handler: async ({ deps, params }) => {
        const id = operationIdOf(params);
        const r = await repo.get(deps.sql, id);
        if (!r) throw new NotFound('not_found', 'No such rotation.');
        return { body: await rotationView(deps.sql, r, await components()) };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: `${PATH}/:operationId/advance`, permission: WRITE, tags, platformOnly: true, body: 'admin.lookup-hmac-rotation-advance',
      response: { 200: 'admin.lookup-hmac-rotation' }, errors: [404, 409],
      summary: 'Move a rotation to its next state once every process applies the current one (409 names those that do not)',
      audit: audit('advance'),
      handler: async ({ deps, params, body, mutate }) => {
        const id = operationIdOf(params);
        const row = await mutate(async (tx) => {
          const m = await advanceRotation(tx, fleet, id, { endGraceEarly: body.endGraceEarly });
          return { result: m.row, resourceId: id, before: { state: m.before.state }, after: { state: m.row.state } };
        });
        await queueWork(row);
        return { body: await rotationView(deps.sql, row) };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: `${PATH}/:operationId/abort`, permission: WRITE, tags, platformOnly: true, body: 'admin.lookup-hmac-rotation-abort',
      response: { 200: 'admin.lookup-hmac-rotation' }, errors: [404, 409],
      summary: 'Abort a rotation: blocked (terminal); the index is rolled back to the source key by the rotation job',
      audit: audit('abort'),
      handler: async ({ deps, params, body, mutate }) => {
        const id = operationIdOf(params);
        const row = await mutate(async (tx) => {
          const m = await abortRotation(tx, id, body.reason ?? 'aborted by an administrator');
          return { result: m.row, resourceId: id, before: { state: m.before.state }, after: { state: m.row.state } };
        });
        await queueWork(row);
        return { body: await rotationView(deps.sql, row) };
      },
    }),
  ];
}
