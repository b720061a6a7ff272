import type { Redis } from 'ioredis';
import { Conflict, NotFound, ValidationError } from '../../errors.js';
import { declareEvents } from '../../events/declare.js';
import type { LookupSlot } from '../keyring.js';
import type { TxSql } from '../../sql.js';
import { usersCreatedBy } from '../../cross-tenant/pii.js';
import { environmentKey, generateKey, initialKeyRow, type KeyRow } from './key-material.js';
import { keyFingerprint } from '../blind-index.js';
import { liveComponents } from './fleet.js';
import { lookupHmacRepo as repo, type RotationRow } from './repository.js';
import { advanceTarget, canAbort, laggards, type RotationState } from './states.js';

/** Each move of a lookup-key rotation. */
const rotationEvents = declareEvents(['control_plane.lookup_hmac_rotation']);

export interface StartInput {
  operationId: string; tenantId: string; startedBy: string;
  keyId?: string | undefined; keySource?: 'generated' | 'environment' | undefined; graceMs: number;
}

/** What a move needs besides the transaction: the fleet's reports and how recent a live one is. */
export interface Fleet { redis: Redis; liveMs: number }

const otherSlot = (s: LookupSlot): LookupSlot => (s === 'A' ? 'B' : 'A');

/** The outbox event of a move from `from` to the state of `next`. */
function recordMove(tx: TxSql, from: RotationState | null, next: RotationRow, extra: Record<string, unknown> = {}): Promise<void> {
  return rotationEvents.emit(tx, next.event_tenant_id, 'control_plane.lookup_hmac_rotation', {
    operation_id: next.operation_id, from, to: next.state, source_generation: next.source_generation, candidate_generation: next.candidate_generation,
    verification_attempt_count: next.verification_attempt_count, finished: next.finished_at !== null, ...extra,
  });
}

/** Writes a move of a rotation and its event in the caller's transaction. */
export async function transition(tx: TxSql, row: RotationRow, to: RotationState, set: Parameters<typeof repo.update>[2] = {}, extra: Record<string, unknown> = {}): Promise<RotationRow> {
  const next = await repo.update(tx, row.operation_id, { ...set, state: to });
  await recordMove(tx, row.state, next, extra);
  return next;
}

/**
 * Starts a rotation (state `planned`): the candidate is generation current + 1 in the other slot, its
 * material generated and sealed here or taken from LOOKUP_HMAC_KEY_<slot>. The operation id is the
 * idempotency key: starting it again answers the existing rotation (`created` false).
 */
export async function startRotation(tx: TxSql, kek: Buffer, input: StartInput, env: NodeJS.ProcessEnv = process.env): Promise<{ row: RotationRow; created: boolean }> {
  const again = await repo.get(tx, input.operationId);
  if (again) return { row: again, created: false };
  // Serialises starts: the unique index would refuse a second one anyway, this says why.
  await tx`lock table lookup_hmac_rotations in share row exclusive mode`;
  const live = await repo.live(tx);
  if (live) throw new Conflict('conflict', `Rotation ${live.operation_id} is not finished (state ${live.state}); one rotation at a time.`);
  const keys = await repo.keys(tx);
  let current = keys.find((k) => k.status === 'current');
  if (!current) { current = initialKeyRow(kek, env); await repo.insertKey(tx, current); }
  const generation = Math.max(await repo.maxGeneration(tx), current.generation) + 1;
  const slot = otherSlot(current.slot);
  let candidate: KeyRow;
  const keyId = input.keyId ?? `lookup-${generation}`;
  if (input.keySource === 'environment') {
    const key = environmentKey(slot, env);
    if (!key) throw new ValidationError({ keySource: [`LOOKUP_HMAC_KEY_${slot} is not set (64 hex characters) in the process that started the rotation`] });
    const fingerprint = keyFingerprint(key);
    const [used] = await tx`select 1 from lookup_hmac_keys where fingerprint = ${fingerprint}`;
    if (used || fingerprint === current.fingerprint) throw new ValidationError({ keySource: [`LOOKUP_HMAC_KEY_${slot} holds a key used before; a rotation needs new key material`] });
    candidate = { generation, key_id: keyId, slot, fingerprint, source: 'environment', sealed: null, status: 'candidate' };
  } else {
    const g = generateKey(kek, generation);
    candidate = { generation, key_id: keyId, slot, fingerprint: g.fingerprint, source: 'generated', sealed: g.sealed, status: 'candidate' };
  }
  const [taken] = await tx`select 1 from lookup_hmac_keys where key_id = ${keyId}`;
  if (taken) throw new ValidationError({ keyId: ['a key with this id exists'] });
  await repo.insertKey(tx, candidate);
  const row = await repo.insert(tx, { operation_id: input.operationId, event_tenant_id: input.tenantId, source_generation: current.generation, candidate_generation: generation, grace_ms: input.graceMs, started_by: input.startedBy });
  await recordMove(tx, null, row);
  return { row, created: true };
}

/** Processes that have not applied the rotation's state yet (for `planned`: that do not hold the candidate). */
export async function lagging(tx: TxSql, fleet: Fleet, row: RotationRow): Promise<string[]> {
  const cand = await repo.key(tx, row.candidate_generation);
  const acks = await liveComponents(fleet.redis, fleet.liveMs);
  if (!acks.length) return ['(no process reports; is Redis reachable?)'];
  return laggards(acks, row.operation_id, row.state, row.finished_at !== null, cand!.fingerprint)
    .map((a) => `${a.role} ${a.id} applies ${a.operationId === row.operation_id ? a.state : 'another state'}`);
}

/**
 * The operator's move to the next state, once every live process applies the current one (else 409
 * naming them). Reindexing and verifying are moved by the rotation job; grace ends at its expiry
 * (or now, with `endGraceEarly`).
 */
export async function advanceRotation(tx: TxSql, fleet: Fleet, operationId: string, opts: { endGraceEarly?: boolean | undefined } = {}): Promise<{ before: RotationRow; row: RotationRow }> {
  const row = await repo.get(tx, operationId, { lock: true });
  if (!row) throw new NotFound('not_found', 'No such rotation.');
  const to = advanceTarget(row.state);
  if (!to) {
    throw new Conflict('conflict', row.state === 'reindexing' || row.state === 'verifying'
      ? `The rotation job moves the rotation out of ${row.state}.` : `A rotation in state ${row.state} has no next state.`);
  }
  if (row.state === 'grace' && !opts.endGraceEarly && Date.now() < (row.grace_expires_at ?? 0)) {
    throw new Conflict('conflict', `The grace period runs until ${new Date(row.grace_expires_at!).toISOString()}; send endGraceEarly to end it now.`);
  }
  const behind = await lagging(tx, fleet, row);
  if (behind.length) throw new Conflict('conflict', `Not every process applies state ${row.state} yet: ${behind.slice(0, 5).join('; ')}${behind.length > 5 ? ` and ${behind.length - 5} more` : ''}.`);
  const now = Date.now();
  let set: Parameters<typeof repo.update>[2] = {};
  if (to === 'activation_dual_write') set = { mutation_started: true };
  if (to === 'dual_read') {
    // The inventory: every user existing at the cutoff is re-indexed; later ones are written under the candidate already.
    set = { cutoff: now, source_row_count: await usersCreatedBy(tx, now) };
  }
  if (to === 'reindexing') set = { checkpoint: { phase: 'reindex', cursor: null, processed: 0, conflicts: 0 } };
  if (to === 'complete') set = { checkpoint: { phase: 'drop', generation: row.source_generation, deleted: 0 }, ...(opts.endGraceEarly && now < (row.grace_expires_at ?? 0) ? { grace_expires_at: now } : {}) };
  return { before: row, row: await transition(tx, row, to, set, opts.endGraceEarly ? { end_grace_early: true } : {}) };
}

/**
 * Aborts a rotation: `blocked`, terminal. Before the index holds candidate entries nothing is left to
 * undo; after, the rotation job re-indexes every user under the source key and drops the candidate's
 * entries before the rotation is finished.
 */
export async function abortRotation(tx: TxSql, operationId: string, reason: string): Promise<{ before: RotationRow; row: RotationRow }> {
  const row = await repo.get(tx, operationId, { lock: true });
  if (!row) throw new NotFound('not_found', 'No such rotation.');
  if (!canAbort(row.state)) throw new Conflict('conflict', `A rotation in state ${row.state} cannot be aborted.`);
  return { before: row, row: await block(tx, row, reason) };
}

/** Moves a rotation to blocked (an abort, or a third failed verification). */
export async function block(tx: TxSql, row: RotationRow, reason: string, set: Parameters<typeof repo.update>[2] = {}): Promise<RotationRow> {
  // Before activation_dual_write (mutation_started) the index holds no candidate entry: nothing to roll back.
  if (!row.mutation_started) {
    await repo.retireKey(tx, row.candidate_generation);
    return transition(tx, row, 'blocked', { ...set, blocked_reason: reason, finished_at: Date.now(), owner_id: null, lease_expires_at: null, checkpoint: { phase: 'done' } });
  }
  return transition(tx, row, 'blocked', { ...set, blocked_reason: reason, checkpoint: { phase: 'rollback', cursor: null, processed: 0, conflicts: 0 } });
}
