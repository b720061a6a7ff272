import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { ServiceUnavailable } from '../errors.js';
import { trackPoolQueue } from '../metrics.js';
import { signingInput, signWith, type JwtHeader, type JwtPayload } from './jwt.js';
import type { KeyRing, SigningKey } from './keys.js';

interface Pending { key: SigningKey; input: string; resolve: (jwt: string) => void; reject: (err: unknown) => void }

const TASK_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../workers/crypto.js');
const MAX_BATCH = 32;

/**
 * Signs JWTs. With crypto threads, signing inputs collected during one turn of the event loop go to the
 * Piscina pool as one batch, so message passing is paid per batch, not per token; with CRYPTO_THREADS=0
 * it signs inline. Past the queue bound it sheds with 503 instead of queueing without limit.
 */
export class Signer {
  private readonly pool: Piscina | undefined;
  private queue: Pending[] = [];
  private scheduled = false;
  private inFlightBatches = 0;

  constructor(private readonly ring: KeyRing, threads: number, private readonly maxQueue: number) {
    if (threads > 0) {
      this.pool = new Piscina({ filename: TASK_FILE, minThreads: threads, maxThreads: threads, idleTimeout: 60_000, maxQueue: Math.max(16, Math.ceil(maxQueue / MAX_BATCH)) });
      trackPoolQueue('crypto', () => this.pool!.queueSize * MAX_BATCH + this.queue.length);
    }
  }

  sign(header: Omit<JwtHeader, 'alg' | 'kid'>, payload: JwtPayload): Promise<string> {
    const key = this.ring.signingKey();
    const input = signingInput({ alg: key.alg, kid: key.kid, ...header }, payload);
    if (!this.pool) return Promise.resolve(`${input}.${signWith(key.alg, key.privateKey, input).toString('base64url')}`);
    if (this.queue.length + this.inFlightBatches * MAX_BATCH >= this.maxQueue) {
      return Promise.reject(new ServiceUnavailable('Token signing is at capacity; retry shortly.'));
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ key, input, resolve, reject });
      if (!this.scheduled) { this.scheduled = true; setImmediate(() => this.flush()); }
    });
  }

  private flush(): void {
    this.scheduled = false;
    while (this.queue.length) {
      // A batch shares one key: the kid in each header must name the key that signs it (rotation may interleave).
      const key = this.queue[0]!.key;
      let n = 1;
      while (n < this.queue.length && n < MAX_BATCH && this.queue[n]!.key === key) n++;
      const batch = this.queue.splice(0, n);
      this.inFlightBatches++;
      this.pool!.run({ kid: key.kid, alg: key.alg, pkcs8: key.pkcs8, inputs: batch.map((p) => p.input) }, { name: 'signBatch' }).then(
        (sigs: string[]) => { this.inFlightBatches--; batch.forEach((p, i) => p.resolve(`${p.input}.${sigs[i]}`)); },
        (err: unknown) => { this.inFlightBatches--; const e = new ServiceUnavailable('Token signing failed; retry shortly.', 1, err); batch.forEach((p) => p.reject(e)); },
      );
    }
  }

  async close(): Promise<void> {
    await this.pool?.destroy();
  }
}
