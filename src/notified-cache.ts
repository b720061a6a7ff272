import type { Redis } from 'ioredis';
import { logIdsOf, type Context } from './tracing/tracer.js';
import { redisUnder } from './tracing/under.js';
import type { Logger } from './log.js';
import { cacheCounters } from './metrics.js';

export interface NotifiedCacheOptions<V> {
  /** What the cache holds, for log lines ("client", "tenant settings"). */
  name: string;
  /** Reads a key's value from its source of truth (a miss, or an entry past its TTL). */
  load?: (key: string) => Promise<V>;
  ttlMs: number;
  /** A shorter TTL for values `isMiss` calls absent (an unknown client: it may be created any time). */
  missTtlMs?: number;
  isMiss?: (value: V) => boolean;
  /**
   * The Redis pub/sub channel (prefix included: ioredis does not prefix channels) on which changed keys
   * are announced to every process; without it a change evicts only in this process and others wait for the TTL.
   */
  channel?: string;
  /** The connection `changed` publishes on (any non-subscriber connection). */
  pub?: Redis;
  log?: Logger;
  /** Concurrent misses of one key share one load (default). Off when the loader is the caller's (its own transaction). */
  shareLoads?: boolean;
  /** The `cache` label of svc_cache_requests_total (default: `name` with spaces as underscores). */
  metric?: string;
  /** At most this many entries (default 100,000); past it the oldest loaded goes first. */
  maxEntries?: number;
}

const MAX_ENTRIES = 100_000;

/**
 * A per-process cache of values read on hot paths: an entry lives `ttlMs`, a hit is answered without a
 * promise (callers `await` a value or a promise alike), concurrent misses share one load, and a change
 * is announced on a Redis channel that evicts the key in every process at once. Pub/sub delivers at
 * most once: the TTL bounds staleness when a notice is missed, and `clear()` is called when the
 * subscriber connection comes back (src/services.ts).
 */
export class NotifiedCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();
  private readonly loading = new Map<string, Promise<V>>();
  private readonly missTtlMs: number;
  private readonly maxEntries: number;
  private readonly counted: ReturnType<typeof cacheCounters>;

  constructor(private readonly opts: NotifiedCacheOptions<V>) {
    if (!(opts.ttlMs > 0)) throw new RangeError(`${opts.name} cache: ttlMs must be positive`);
    if (opts.maxEntries !== undefined && !(opts.maxEntries >= 1)) throw new RangeError(`${opts.name} cache: maxEntries must be at least 1`);
    if (opts.channel !== undefined && !opts.pub) throw new TypeError(`${opts.name} cache: a channel needs a pub connection`);
    this.missTtlMs = opts.missTtlMs ?? opts.ttlMs;
    this.maxEntries = opts.maxEntries ?? MAX_ENTRIES;
    this.counted = cacheCounters(opts.metric ?? opts.name.replace(/\s+/g, '_'));
  }

  /** The cached value, or a promise of it loaded by `load` (or the cache's own loader). */
  get(key: string, load?: (key: string) => Promise<V>): V | Promise<V> {
    const e = this.entries.get(key);
    if (e !== undefined && e.until > Date.now()) { this.counted.hit.inc(); return e.value; }
    this.counted.miss.inc();
    const share = this.opts.shareLoads !== false;
    let p = share ? this.loading.get(key) : undefined;
    if (p === undefined) {
      const loader = load ?? this.opts.load;
      if (!loader) throw new TypeError(`${this.opts.name} cache: no loader`);
      p = loader(key).then((value) => {
        // Keys come from requests (client ids, tenant ids in public URLs): a scan of made-up ones must not
        // grow the process without bound. A Map iterates in insertion order, and a reload re-inserts, so
        // the first key is the one loaded longest ago.
        this.entries.delete(key);
        if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
        this.entries.set(key, { value, until: Date.now() + (this.opts.isMiss?.(value) ? this.missTtlMs : this.opts.ttlMs) });
        return value;
      });
      if (share) {
        const shared = p.finally(() => this.loading.delete(key));
        this.loading.set(key, shared);
        p = shared;
      }
    }
    return p;
  }

  /** Subscribes to change notices on the process's subscriber connection. */
  async subscribe(sub: Redis): Promise<void> {
    const channel = this.opts.channel;
    if (channel === undefined) throw new TypeError(`${this.opts.name} cache has no channel`);
    sub.on('message', (ch: string, key: string) => { if (ch === channel) this.entries.delete(key); });
    await sub.subscribe(channel);
  }

  /** Forgets one key in this process only. */
  forget(key: string): void { this.entries.delete(key); }

  /** Forgets every entry (after the notice channel was down: a notice may have been missed). */
  clear(): void { this.entries.clear(); }

  /**
   * Evicts locally and tells every other process (a failed publish is logged: the TTL still bounds
   * staleness). `trace`: a sampled request's context, under which the publish makes its span.
   */
  async changed(key: string, trace?: Context): Promise<void> {
    this.entries.delete(key);
    if (this.opts.channel === undefined) return;
    await redisUnder(this.opts.pub!, trace).publish(this.opts.channel, key).catch((err: Error) => this.opts.log?.warn({ err: err.message, ...logIdsOf(trace) }, `${this.opts.name} change notice not published`));
  }
}
