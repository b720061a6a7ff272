import type { KeyObject } from 'node:crypto';
import { importPkcs8, signWith } from '../src/tokens/jwt.js';
import type { SigningAlg } from '../src/tokens/keys.js';

// Piscina task file for CPU-heavy crypto. Private keys are imported once per thread and kid.
const keys = new Map<string, KeyObject>();

export interface SignBatch { kid: string; alg: SigningAlg; pkcs8: Uint8Array; inputs: string[] }

/** Signs a batch of JWS signing inputs; returns base64url signatures in order. */
export function signBatch(task: SignBatch): string[] {
  let key = keys.get(task.kid);
  if (!key) {
    key = importPkcs8(Buffer.from(task.pkcs8));
    keys.set(task.kid, key);
  }
  const out = new Array<string>(task.inputs.length);
  for (let i = 0; i < task.inputs.length; i++) out[i] = signWith(task.alg, key, task.inputs[i]!).toString('base64url');
  return out;
}
