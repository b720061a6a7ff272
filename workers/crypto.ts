import { createPublicKey, type KeyObject } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { importPkcs8, signWith, verifySignature } from '../src/tokens/jwt.js';
import type { SigningAlg } from '../src/tokens/keys.js';

// Piscina task file for CPU-heavy crypto. Keys are imported once per thread and kid: a batch carries
// the key's DER only when the thread has said it lacks it (see Signer), since cloning it into every
// message was the largest main-thread cost of issuance (perf/RESULTS.md run 17).
const privateKeys = new Map<string, KeyObject>();

// Name this OS thread (Linux: a thread may rename itself through /proc/thread-self/comm), so `top -H`,
// `ps -L` and the perf harness's per-thread CPU (perf/lib/cpucost.ts) tell signing threads apart.
try { writeFileSync('/proc/thread-self/comm', 'svc-crypto'); } catch { /* not Linux: names are cosmetic */ }
const publicKeys = new Map<string, KeyObject>();

export interface SignBatch { kid: string; alg: SigningAlg; pkcs8?: Uint8Array; inputs: string[] }
export interface VerifyBatch { kid: string; alg: SigningAlg; spki?: Uint8Array; inputs: string[]; signatures: Uint8Array[] }

/** What a batch returns: one result per input, and how long the thread took (ms), from which the caller predicts queue waits. */
export interface BatchResult<O> { out: O[]; ms: number }

/** Signs a batch of JWS signing inputs; returns base64url signatures in order, or null when this thread needs the key. */
export function signBatch(task: SignBatch): BatchResult<string> | null {
  const key = keyFor(privateKeys, task.kid, task.pkcs8, importPkcs8);
  if (!key) return null;
  const t0 = performance.now();
  const out = new Array<string>(task.inputs.length);
  for (let i = 0; i < task.inputs.length; i++) out[i] = signWith(task.alg, key, task.inputs[i]!).toString('base64url');
  return { out, ms: performance.now() - t0 };
}

/** Verifies a batch of signatures made with one key; returns one boolean per input, or null when this thread needs the key. */
export function verifyBatch(task: VerifyBatch): BatchResult<boolean> | null {
  const key = keyFor(publicKeys, task.kid, task.spki, (der) => createPublicKey({ key: der, format: 'der', type: 'spki' }));
  if (!key) return null;
  const t0 = performance.now();
  const k = { alg: task.alg, publicKey: key };
  const out = task.inputs.map((input, i) => verifySignature(k, input, Buffer.from(task.signatures[i]!)));
  return { out, ms: performance.now() - t0 };
}

/** This thread's key for kid, imported from der the first time it comes along; null while the thread has neither. */
function keyFor(cache: Map<string, KeyObject>, kid: string, der: Uint8Array | undefined, load: (der: Buffer) => KeyObject): KeyObject | null {
  let key = cache.get(kid);
  if (!key && der) { key = load(Buffer.from(der)); cache.set(kid, key); }
  return key ?? null;
}
