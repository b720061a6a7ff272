import type { Db } from '../../sql.js';
import type { KeyRow } from './key-material.js';
import type { RotationState } from './states.js';

/** A rotation row (lookup_hmac_rotations). */
export interface RotationRow {
  operation_id: string; event_tenant_id: string; state: RotationState; source_generation: number; candidate_generation: number;
  checkpoint: Record<string, unknown>; cutoff: number | null; source_row_count: number | null; current_row_count: number | null;
  verification_attempt_count: number; grace_ms: number; grace_expires_at: number | null; owner_id: string | null;
  fencing_token: number; lease_expires_at: number | null; mutation_started: boolean; blocked_reason: string | null;
  started_by: string; created_at: number; updated_at: number; finished_at: number | null;
}

const BIGINTS = ['cutoff', 'source_row_count', 'current_row_count', 'grace_ms', 'grace_expires_at', 'fencing_token', 'lease_expires_at', 'created_at', 'updated_at', 'finished_at'] as const;

/** bigint columns arrive as strings from the driver. */
export function rotationRow(r: Record<string, unknown>): RotationRow {
  const out = { ...r } as Record<string, unknown>;
  for (const k of BIGINTS) out[k] = out[k] === null || out[k] === undefined ? null : Number(out[k]);
  return out as unknown as RotationRow;
}

/** The control plane's keys and rotations: environment-wide rows, not scoped by tenant (one index key serves every tenant). */
export const lookupHmacRepo = {
  async keys(db: Db): Promise<KeyRow[]> {
    return db<KeyRow[]>`select generation, key_id, slot, fingerprint, source, sealed, status from lookup_hmac_keys where status <> 'retired' order by generation`;
  },

  async key(db: Db, generation: number): Promise<KeyRow | null> {
    const [k] = await db<KeyRow[]>`select generation, key_id, slot, fingerprint, source, sealed, status from lookup_hmac_keys where generation = ${generation}`;
    return k ?? null;
  },

  async maxGeneration(db: Db): Promise<number> {
    const [r] = await db<{ g: number | null }[]>`select max(generation)::int as g from lookup_hmac_keys`;
    return r?.g ?? 0;
  },

  async insertKey(db: Db, k: KeyRow): Promise<void> {
    await db`insert into lookup_hmac_keys (generation, key_id, slot, fingerprint, source, sealed, status)
      values (${k.generation}, ${k.key_id}, ${k.slot}, ${k.fingerprint}, ${k.source}, ${k.sealed}, ${k.status}) on conflict (generation) do nothing`;
  },

  /** Retires a key: its material is erased (only the fingerprint stays, for the record). */
  async retireKey(db: Db, generation: number): Promise<void> {
    await db`update lookup_hmac_keys set status = 'retired', sealed = null, retired_at = now_ms() where generation = ${generation}`;
  },

  async promoteKey(db: Db, generation: number): Promise<void> {
    await db`update lookup_hmac_keys set status = 'current' where generation = ${generation}`;
  },

  /** The unfinished rotation, if any (at most one: a unique index). */
  async live(db: Db, opts: { lock?: boolean } = {}): Promise<RotationRow | null> {
    const [r] = opts.lock
      ? await db`select * from lookup_hmac_rotations where finished_at is null for update`
      : await db`select * from lookup_hmac_rotations where finished_at is null`;
    return r ? rotationRow(r) : null;
  },

  async get(db: Db, operationId: string, opts: { lock?: boolean } = {}): Promise<RotationRow | null> {
    const [r] = opts.lock
      ? await db`select * from lookup_hmac_rotations where operation_id = ${operationId} for update`
      : await db`select * from lookup_hmac_rotations where operation_id = ${operationId}`;
    return r ? rotationRow(r) : null;
  },

  async insert(db: Db, r: Pick<RotationRow, 'operation_id' | 'event_tenant_id' | 'source_generation' | 'candidate_generation' | 'grace_ms' | 'started_by'>): Promise<RotationRow> {
    const [row] = await db`insert into lookup_hmac_rotations (operation_id, event_tenant_id, state, source_generation, candidate_generation, grace_ms, started_by)
      values (${r.operation_id}, ${r.event_tenant_id}, 'planned', ${r.source_generation}, ${r.candidate_generation}, ${r.grace_ms}, ${r.started_by}) returning *`;
    return rotationRow(row!);
  },

  /** Applies a change of columns to a rotation (always bumping updated_at) and returns the row. */
  async update(db: Db, operationId: string, set: Partial<Omit<RotationRow, 'operation_id' | 'updated_at'>>): Promise<RotationRow> {
    const cols = Object.keys(set) as Array<keyof typeof set>;
    const values = { ...set, updated_at: Date.now() } as Record<string, unknown>;
    if ('checkpoint' in set) values.checkpoint = db.json(set.checkpoint as never);
    const [row] = await db`update lookup_hmac_rotations set ${db(values as never, [...cols, 'updated_at'] as never)} where operation_id = ${operationId} returning *`;
    return rotationRow(row!);
  },
};
