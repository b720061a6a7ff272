import { randomFillSync } from 'node:crypto';

// Entropy drawn from the CSPRNG in 4 KiB blocks and handed out once, in order (as Node does for
// randomUUID): a synchronous randomBytes call per small value cost ~3% of an HTTP process's busy time
// on the login path (IVs, ids, codes, tokens: perf/RESULTS.md run 89-login2). Every byte is used at
// most once; cluster workers are separate processes, so no two hold the same pool.
const POOL_BYTES = 4096;
const LARGEST_POOLED = 256;
const pool = Buffer.alloc(POOL_BYTES);
let offset = POOL_BYTES;

/** `n` bytes from the CSPRNG, as a Buffer of its own (same contract as crypto.randomBytes). */
export function randomBytes(n: number): Buffer {
  if (n > LARGEST_POOLED) return randomFillSync(Buffer.allocUnsafe(n));
  if (offset + n > POOL_BYTES) { randomFillSync(pool); offset = 0; }
  const out = Buffer.allocUnsafe(n);
  pool.copy(out, 0, offset, offset + n);
  // Handed-out bytes are wiped from the pool so nothing in memory repeats them.
  pool.fill(0, offset, offset + n);
  offset += n;
  return out;
}
