import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { Overloaded, ServiceUnavailable } from '../errors.js';
import { cryptoWaitSign, cryptoWaitVerify, trackPoolQueue } from '../metrics.js';
import { PoolTrace } from '../tracing/pool.js';
import { context, hasActiveSpan, tracingOn, type Context } from '../tracing/tracer.js';
import { admitSigning } from './admission.js';
import { headerAlgFits, keyAlgOf } from './algorithms.js';
import { signingInput, signWith, verifySignature, type JwtHeader, type JwtPayload } from './jwt.js';
import type { KeyRing, SigningKey, VerifyKey } from './keys.js';

const TASK_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../workers/crypto.js');
const MAX_BATCH = 32;

interface Pending<K, O> { key: K; input: string; extra: Uint8Array | undefined; resolve: (out: O) => void; reject: (err: unknown) => void; trace?: PoolTrace | undefined; queuedAt: number }

export interface SignerOptions {
  /** Piscina threads per process; 0 signs inline. */
  threads: number;
  /** Hard bound on operations queued or running in the pool. */
  maxQueue: number;
  /** Operations queued or running below which a new one is always admitted (see admission.ts). */
  floor: number;
  /** Shed new operations past the floor that would wait longer than this for a thread (ms); 0 disables. */
  maxWaitMs: number;
  verifyInPool: boolean;
  /** Niceness of the pool's threads (Piscina niceIncrement). */
  nice?: number;
}

/**
 * Collects crypto operations made during one turn of the event loop and sends them to the Piscina pool
 * as batches of one key each, so message passing is paid per batch, not per token. Past its hard bound
 * it refuses with 503. For admission it predicts a new operation's wait as (operations ahead / threads)
 * x the recent time per operation measured in the threads: a count alone cannot bound latency, because
 * how fast the queue drains depends on what else the CPUs are doing, and a measured wait alone goes
 * stale when the queue empties.
 */
class BatchQueue<K extends VerifyKey, O> {
  private queue: Array<Pending<K, O>> = [];
  private scheduled = false;
  private inFlight = 0;
  /** Requests admitted and not yet finished (admit/release). */
  private admitted = 0;
  /** Batches sent to the pool and not yet back. */
  private batches = 0;
  /** Moving average of thread time per operation (ms), wall clock, so CPU contention shows in it. */
  private perOpMs = 0;

  /** svc_crypto_queue_wait_seconds{op} of this queue's operation. */
  private readonly wait: { observe(v: number): void };

  constructor(private readonly pool: Piscina, private readonly task: string, private readonly opts: SignerOptions,
    private readonly build: (key: K, batch: Array<Pending<K, O>>, withKey: boolean) => unknown) {
    this.wait = task === 'signBatch' ? cryptoWaitSign : cryptoWaitVerify;
  }

  get depth(): number { return this.queue.length + this.inFlight; }

  /**
   * Admits one request that will sign at most once (src/tokens/admission.ts), counting it until
   * release(): requests admitted but still authenticating have not queued yet, so a burst arriving in
   * one loop turn would otherwise be judged against an empty queue. Each holds at most one operation,
   * so the larger of the two counts is the depth a newcomer will find.
   */
  admit(): boolean {
    const ahead = Math.max(this.depth, this.admitted);
    if (!admitSigning(ahead, this.perOpMs, { floor: Math.max(MAX_BATCH, this.opts.floor), budgetMs: this.opts.maxWaitMs, hardMax: this.opts.maxQueue, threads: this.opts.threads })) return false;
    this.admitted++;
    return true;
  }

  release(): void { this.admitted--; }

  /** Queues an operation; only the hard bound refuses here, admission (admit) is the caller's call. */
  push(key: K, input: string, extra?: Uint8Array, parent?: Context): Promise<O> {
    if (this.depth >= this.opts.maxQueue) return Promise.reject(new Overloaded('The crypto pool is at capacity; retry shortly.', 'crypto_queue_full'));
    return new Promise((resolve, reject) => {
      this.queue.push({ key, input, extra, resolve, reject, trace: parent !== undefined ? new PoolTrace(this.task, parent) : tracingOn && hasActiveSpan() ? new PoolTrace(this.task, context.active()) : undefined, queuedAt: performance.now() });
      if (!this.scheduled) { this.scheduled = true; setImmediate(() => this.flush()); }
    });
  }

  private flush(): void {
    this.scheduled = false;
    // At most one batch per thread in flight: what arrives meanwhile waits here and leaves as one larger
    // batch when a thread is done, so under load a message (and a thread wake-up, which costs tens of
    // microseconds on a VM) is paid per dozens of tokens; when idle a token leaves at once.
    while (this.queue.length && this.batches < this.opts.threads) {
      // One key per batch: rotation may interleave keys within a turn.
      const key = this.queue[0]!.key;
      let n = 1;
      while (n < this.queue.length && n < MAX_BATCH && this.queue[n]!.key.kid === key.kid) n++;
      const batch = this.queue.splice(0, n);
      this.inFlight += n;
      this.batches++;
      this.send(key, batch, false);
    }
  }

  private send(key: K, batch: Array<Pending<K, O>>, withKey: boolean): void {
    const n = batch.length;
    if (tracingOn) for (const p of batch) p.trace?.sent(n);
    // A batch leaves for a free thread at once (flush sends at most one per thread), so the wait ends
    // here; a re-send with the key (below) is not a second wait.
    if (!withKey) { const now = performance.now(); for (const p of batch) this.wait.observe((now - p.queuedAt) / 1000); }
    this.pool.run(this.build(key, batch, withKey), { name: this.task }).then(
      (res: { out: O[]; ms: number } | null) => {
        // The thread that took the batch has not seen this key yet: send it again with the key.
        if (res === null && !withKey) { this.send(key, batch, true); return; }
        this.done(n);
        if (res === null) { const e = new ServiceUnavailable('A crypto operation failed; retry shortly.', 1); batch.forEach((p) => { p.trace?.done(e); p.reject(e); }); return; }
        const perOp = res.ms / n;
        this.perOpMs = this.perOpMs === 0 ? perOp : this.perOpMs * 0.8 + perOp * 0.2;
        batch.forEach((p, i) => { p.trace?.done(); p.resolve(res.out[i]!); });
      },
      (err: unknown) => { this.done(n); const e = new ServiceUnavailable('A crypto operation failed; retry shortly.', 1, err); batch.forEach((p) => { p.trace?.done(e); p.reject(e); }); },
    );
  }

  /** A batch came back: its thread is free for what queued up meanwhile. */
  private done(n: number): void {
    this.inFlight -= n;
    this.batches--;
    if (this.queue.length && !this.scheduled) this.flush();
  }
}

/**
 * RS256/PS256/ES256/EdDSA signing and verification. With CRYPTO_THREADS > 0 signing runs in a Piscina pool
 * (batched); verification runs in the pool only with CRYPTO_VERIFY=pool, since an RSA verification costs
 * about as much as a message round trip (see perf/RESULTS.md). With CRYPTO_THREADS=0 everything is inline.
 */
export class Signer {
  private readonly pool: Piscina | undefined;
  private readonly signQ: BatchQueue<SigningKey, string> | undefined;
  private readonly verifyQ: BatchQueue<VerifyKey, boolean> | undefined;
  private readonly spki = new Map<string, Uint8Array>();

  constructor(private readonly ring: KeyRing, opts: Partial<SignerOptions> = {}) {
    const o: SignerOptions = { threads: 0, maxQueue: 1024, floor: 192, maxWaitMs: 0, verifyInPool: false, ...opts };
    if (o.threads > 0) {
      this.pool = new Piscina({
        filename: TASK_FILE, minThreads: o.threads, maxThreads: o.threads, idleTimeout: 60_000, niceIncrement: o.nice ?? 0,
        maxQueue: Math.max(16, Math.ceil(o.maxQueue / 4)),
      });
      this.signQ = new BatchQueue(this.pool, 'signBatch', o, (key, batch, withKey) => ({
        kid: key.kid, alg: key.alg, pkcs8: withKey ? key.pkcs8 : undefined, inputs: batch.map((p) => p.input),
      }));
      if (o.verifyInPool) {
        this.verifyQ = new BatchQueue(this.pool, 'verifyBatch', o, (key, batch, withKey) => ({
          kid: key.kid, alg: key.alg, spki: withKey ? this.spkiOf(key) : undefined, inputs: batch.map((p) => p.input), signatures: batch.map((p) => p.extra!),
        }));
      }
      trackPoolQueue('crypto', () => (this.signQ?.depth ?? 0) + (this.verifyQ?.depth ?? 0));
    }
  }

  /**
   * One-shot issuance asks here before any other work: false while a new signature would wait longer
   * than the budget (then refuse at once); true admits it until release(), which must follow.
   */
  admit(): boolean { return this.signQ?.admit() ?? true; }
  release(): void { this.signQ?.release(); }

  /**
   * Signs a token of `tenant` with the tenant's key: of the algorithm `alg` names when the tenant enables
   * it (an ID token's or introspection answer's client may ask for one), else of the tenant's default.
   * The header carries the name asked for when it is one of the key's (EdDSA or Ed25519), else the key's.
   */
  sign(tenant: string, header: Omit<JwtHeader, 'alg' | 'kid'>, payload: JwtPayload, alg?: string | null, trace?: Context): Promise<string> {
    let key: SigningKey;
    try { key = this.ring.signingKey(tenant, keyAlgOf(alg)); } catch (err) { return Promise.reject(err); }
    const name = alg && headerAlgFits(alg, key.alg) ? alg : key.alg;
    const input = signingInput({ alg: name, kid: key.kid, ...header }, payload);
    if (!this.signQ) return Promise.resolve(`${input}.${signWith(key.alg, key.privateKey, input).toString('base64url')}`);
    return this.signQ.push(key, input, undefined, trace).then((sig) => `${input}.${sig}`);
  }

  /** Verifies a signature with one of our keys, in the pool when so configured. `trace`: a sampled request's (its pool span's parent). */
  verify(key: VerifyKey, input: string, signature: Buffer, trace?: Context): Promise<boolean> | boolean {
    if (!this.verifyQ) return verifySignature(key, input, signature);
    return this.verifyQ.push(key, input, signature, trace);
  }

  private spkiOf(key: VerifyKey): Uint8Array {
    let der = this.spki.get(key.kid);
    if (!der) { der = key.publicKey.export({ format: 'der', type: 'spki' }); this.spki.set(key.kid, der); }
    return der;
  }

  async close(): Promise<void> {
    await this.pool?.destroy();
  }
}
