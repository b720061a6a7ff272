import { deflateSync } from 'node:zlib';
import type { Context } from '@opentelemetry/api';
import type { Sql } from '../sql.js';
import { sqlUnder } from '../tracing/under.js';
import { parseJti } from './jti.js';
import type { Signer } from './signer.js';

/**
 * Token status lists (draft-ietf-oauth-status-list): a tenant that turns on `status_list` gets a
 * `status: {status_list: {idx, uri}}` claim in its access tokens, and resource servers fetch the signed,
 * compressed list at `uri` to see revocations without introspecting each request.
 *
 * A token's index is global to its tenant (list = idx / LIST_BITS) and is carried in its jti (after the
 * 22 random characters, `_<base 36>`), so every revocation by jti (the revoke endpoint, refresh families,
 * code replays, elevation grants) records it with the revocation in Postgres, from which lists are built.
 * Revocations by mark (everything of a user or client before a time) and tenant suspension are not in the
 * lists: a resource server that must honour those introspects (docs/status-lists.md).
 */

/** Tokens per list: 2^20, a 128 KiB bitmap before compression. */
export const LIST_BITS = 1 << 20;
/** Indices a process takes from its tenant's counter at a time (one Postgres round trip per block). */
const BLOCK = 1024;
/** How long a process serves the list it built (the regeneration delay after a revocation). */
const REBUILD_MS = 500;
/** The ttl claim: how long a resource server may keep a list before fetching it again. */
export const LIST_TTL_SECONDS = 10;
const RANDOM_LENGTH = 22;

/** The tenant-global status index a jti carries, if it carries one. */
export function statusIdxOf(jti: string): number | undefined {
  const p = parseJti(jti);
  if (!p || p.random.length <= RANDOM_LENGTH + 1 || p.random[RANDOM_LENGTH] !== '_') return undefined;
  const n = parseInt(p.random.slice(RANDOM_LENGTH + 1), 36);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** The jti of a token with a status index. */
export function withStatusIdx(jti: string, idx: number): string {
  return `${jti}_${idx.toString(36)}`;
}

// Status bits are read least significant bit first (draft section 4.1); built here one byte at a time.
/** Where a tenant's cached settings come from (the tenant settings cache; named here so tokens/ does not import tenants/). */
interface SettingsSource {
  get(tenant: string): { settings: { status_list?: boolean } } | Promise<{ settings: { status_list?: boolean } }>;
}

export interface StatusClaim { status_list: { idx: number; uri: string } }

export class StatusLists {
  private readonly blocks = new Map<string, { next: number; end: number }>();
  private readonly allocating = new Map<string, Promise<number>>();
  private readonly built = new Map<string, { at: number; token: Promise<string | null> }>();

  constructor(private readonly sql: Sql, private readonly issuer: string, private readonly settings: SettingsSource, private readonly signer: Signer) {}

  uri(tenant: string, list: number): string {
    return `${this.issuer}/statuslists/${encodeURIComponent(tenant)}/${list}`;
  }

  /** Whether the tenant has turned status lists on (the cached settings: no promise on a hit). */
  enabled(tenant: string): boolean | Promise<boolean> {
    const p = this.settings.get(tenant);
    return p instanceof Promise ? p.then((x) => x.settings.status_list === true) : p.settings.status_list === true;
  }

  /** A fresh index of the tenant: from this process's block, a new block when it is used up. */
  async allocate(tenant: string): Promise<number> {
    const b = this.blocks.get(tenant);
    if (b && b.next < b.end) return b.next++;
    let p = this.allocating.get(tenant);
    if (!p) {
      p = (async () => {
        const [row] = await this.sql<{ next: string }[]>`insert into status_list_counters (tenant_id, next) values (${tenant}, ${BLOCK})
          on conflict (tenant_id) do update set next = status_list_counters.next + ${BLOCK} returning next`;
        const end = Number(row!.next);
        this.blocks.set(tenant, { next: end - BLOCK, end });
        return end;
      })().finally(() => this.allocating.delete(tenant));
      this.allocating.set(tenant, p);
    }
    await p;
    return this.allocate(tenant);
  }

  /** The claim for an index, and the list's URI. */
  claim(tenant: string, idx: number): StatusClaim {
    return { status_list: { idx: idx % LIST_BITS, uri: this.uri(tenant, Math.floor(idx / LIST_BITS)) } };
  }

  /**
   * The signed status list token of one of the tenant's lists (`statuslist+jwt`), rebuilt from Postgres
   * at most every 500 ms per process, so a revocation shows within a second of its commit (plus the
   * resource server's own caching, bounded by ttl). Null when the list was never handed out. `trace`: a
   * sampled request's context (deps.trace); a build it starts makes its spans under it.
   */
  token(tenant: string, list: number, trace?: Context): Promise<string | null> {
    const key = `${tenant}\n${list}`;
    const now = Date.now();
    const hit = this.built.get(key);
    if (hit && now - hit.at < REBUILD_MS) return hit.token;
    const token = this.build(tenant, list, trace);
    this.built.set(key, { at: now, token });
    // Only lists that exist stay cached (so asking for arbitrary list numbers cannot grow the map); a
    // failed build is forgotten, and its rejection is the caller's.
    token.then((t) => { if (t === null) this.built.delete(key); }, () => this.built.delete(key));
    return token;
  }

  private async build(tenant: string, list: number, trace: Context | undefined): Promise<string | null> {
    const sql = sqlUnder(this.sql, trace);
    const lo = list * LIST_BITS;
    const [counter] = await sql<{ next: string }[]>`select next from status_list_counters where tenant_id = ${tenant}`;
    const handedOut = counter ? Number(counter.next) : 0;
    if (handedOut <= lo) return null;
    const size = Math.min(LIST_BITS, handedOut - lo);
    const bits = Buffer.alloc(Math.ceil(size / 8));
    const rows = await sql<{ status_idx: string }[]>`select status_idx from revocations
      where tenant_id = ${tenant} and status_idx >= ${lo} and status_idx < ${lo + size} and expires_at > ${Date.now()}`;
    for (const r of rows) {
      const i = Number(r.status_idx) - lo;
      bits[i >> 3] = bits[i >> 3]! | (1 << (i & 7));
    }
    const iat = Math.floor(Date.now() / 1000);
    return this.signer.sign(tenant, { typ: 'statuslist+jwt' }, {
      sub: this.uri(tenant, list), iat, exp: iat + LIST_TTL_SECONDS * 6, ttl: LIST_TTL_SECONDS,
      status_list: { bits: 1, lst: deflateSync(bits).toString('base64url') },
    }, undefined, trace);
  }
}
