import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import { ServiceUnavailable } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { LookupKey, LookupKeyring } from '../keyring.js';
import type { Sql } from '../../sql.js';
import { initialKeyRow, loadKey, type KeyRow } from './key-material.js';
import { rotationRow, type RotationRow } from './repository.js';
import { keyUse, type ComponentAck } from './states.js';
import { FLEET_KEY } from './fleet.js';
import { setLookupRotation } from '../../metrics.js';

export interface FollowerOptions {
  sql: Sql;
  /** The process's cache connection (key prefix applied): where it reports what it applies. */
  redis: Redis | null;
  kek: Buffer;
  role: string;
  refreshMs: number;
  /** A report older than this is not a live process; a process that could not refresh for half of it refuses to index. */
  liveMs: number;
  log: Logger;
  env?: NodeJS.ProcessEnv;
}

/**
 * The lookup keyring of one process, following the control plane: it reads the current key and the
 * live rotation every `refreshMs` (one statement, one snapshot), loads the keys that state needs, and
 * reports to Redis the rotation state it applies and the fingerprints it holds, which is what the
 * operator's moves wait for (src/pii/lookup-keys/controller.ts). Fail closed: when its view may be older
 * than a move could be (no refresh for liveMs / 2), or a key it needs has another fingerprint here,
 * indexing refuses with 503 rather than write or look up under the wrong keys.
 */
export class KeyringFollower implements LookupKeyring {
  readonly id = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  private writes: readonly LookupKey[] = [];
  private reads: readonly LookupKey[] = [];
  private confirmedAt = 0;
  private problem: string | null = null;
  private readonly loaded = new Map<string, LookupKey>();
  private timer: NodeJS.Timeout | undefined;
  private ack: Omit<ComponentAck, 'at'> = { id: this.id, role: '', operationId: null, state: null, finished: true, fingerprints: [] };

  constructor(private readonly o: FollowerOptions) { this.ack.role = o.role; }

  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => {
      this.refresh().catch((err: Error) => this.o.log.warn({ err: err.message }, 'lookup keyring not refreshed'));
    }, this.o.refreshMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.o.redis?.hdel(FLEET_KEY, this.id).catch(() => {});
  }

  writeKeys(): readonly LookupKey[] { this.usable(); return this.writes; }
  readKeys(): readonly LookupKey[] { this.usable(); return this.reads; }

  private usable(): void {
    if (this.problem) throw new ServiceUnavailable('The email lookup key is not available in this process.', 5);
    if (Date.now() - this.confirmedAt > this.o.liveMs / 2) throw new ServiceUnavailable('The email lookup keys could not be confirmed recently; retry shortly.', 2);
  }

  /** Reads the control plane once and applies it; the report goes to Redis (a failure there only delays moves). */
  async refresh(): Promise<void> {
    const started = Date.now();
    const [snap] = await this.o.sql<{ keys: Array<Omit<KeyRow, 'sealed'> & { sealed: string | null }>; live: Record<string, unknown> | null }[]>`
      select (select coalesce(json_agg(k order by k.generation), '[]'::json) from (select generation, key_id, slot, fingerprint, source,
                encode(sealed, 'base64') as sealed, status from lookup_hmac_keys where status <> 'retired') k) as keys,
             (select row_to_json(r) from lookup_hmac_rotations r where finished_at is null) as live`;
    const rows = snap!.keys.map((k) => ({ ...k, sealed: k.sealed === null ? null : Buffer.from(k.sealed, 'base64') }));
    const live = snap!.live ? rotationRow(snap!.live) : null;
    this.apply(rows, live);
    this.confirmedAt = started;
    await this.publish();
  }

  private apply(rows: KeyRow[], live: RotationRow | null): void {
    const byGen = new Map(rows.map((r) => [r.generation, r]));
    const current = rows.find((r) => r.status === 'current') ?? initialKeyRow(this.o.kek, this.o.env);
    const held: string[] = [];
    const problems: string[] = [];
    const load = (row: KeyRow | undefined): LookupKey | null => {
      if (!row) return null;
      const cacheKey = `${row.generation}:${row.fingerprint}`;
      let k = this.loaded.get(cacheKey);
      if (!k) {
        try { k = loadKey(row, this.o.kek, this.o.env); this.loaded.set(cacheKey, k); } catch (err) { problems.push((err as Error).message); return null; }
      }
      held.push(k.fingerprint);
      return k;
    };
    let writes: Array<LookupKey | null>; let reads: Array<LookupKey | null>;
    if (live) {
      const source = load(byGen.get(live.source_generation));
      const candidate = load(byGen.get(live.candidate_generation));
      const use = keyUse(live.state, false);
      const pick = (w: 'source' | 'candidate') => (w === 'source' ? source : candidate);
      writes = use.write.map(pick); reads = use.read.map(pick);
    } else {
      const k = load(current);
      writes = [k]; reads = [k];
    }
    // Keys the state does not use (a candidate not yet confirmed everywhere) may be missing without harm.
    if (writes.some((k) => !k) || reads.some((k) => !k)) {
      if (this.problem === null) this.o.log.error({ problems }, 'a lookup key in use is unavailable in this process; email lookups refused');
      this.problem = problems.join('; ') || 'lookup key unavailable';
    } else {
      this.problem = null;
      this.writes = Object.freeze(writes as LookupKey[]);
      this.reads = Object.freeze(reads as LookupKey[]);
    }
    const keep = new Set([...rows, current].map((r) => `${r.generation}:${r.fingerprint}`));
    for (const k of this.loaded.keys()) if (!keep.has(k)) this.loaded.delete(k);
    this.ack = { id: this.id, role: this.o.role, operationId: live?.operation_id ?? null, state: live?.state ?? null, finished: !live, fingerprints: held };
    setLookupRotation(live?.state ?? null, live?.updated_at ?? null);
  }

  private async publish(): Promise<void> {
    if (!this.o.redis) return;
    try {
      await this.o.redis.hset(FLEET_KEY, this.id, JSON.stringify({ ...this.ack, at: this.confirmedAt }));
    } catch (err) {
      this.o.log.debug({ err: (err as Error).message }, 'lookup keyring report not written');
    }
  }
}
