import { createPublicKey, type KeyObject } from 'node:crypto';
import { importPkcs8, signWith, verifySignature } from '../src/tokens/jwt.js';
import type { SigningAlg } from '../src/tokens/keys.js';

// Piscina task file for CPU-heavy crypto. Keys are imported once per thread and kid.
const privateKeys = new Map<string, KeyObject>();
const publicKeys = new Map<string, KeyObject>();

export interface SignBatch { kid: string; alg: SigningAlg; pkcs8: Uint8Array; inputs: string[] }
export interface VerifyBatch { kid: string; alg: SigningAlg; spki: Uint8Array; inputs: string[]; signatures: Uint8Array[] }

/** Signs a batch of JWS signing inputs; returns base64url signatures in order. */
export function signBatch(task: SignBatch): string[] {
  let key = privateKeys.get(task.kid);
  if (!key) { key = importPkcs8(Buffer.from(task.pkcs8)); privateKeys.set(task.kid, key); }
  const out = new Array<string>(task.inputs.length);
  for (let i = 0; i < task.inputs.length; i++) out[i] = signWith(task.alg, key, task.inputs[i]!).toString('base64url');
  return out;
}

/** Verifies a batch of signatures made with one key; returns one boolean per input. */
export function verifyBatch(task: VerifyBatch): boolean[] {
  let key = publicKeys.get(task.kid);
  if (!key) { key = createPublicKey({ key: Buffer.from(task.spki), format: 'der', type: 'spki' }); publicKeys.set(task.kid, key); }
  const k = { alg: task.alg, publicKey: key };
  return task.inputs.map((input, i) => verifySignature(k, input, Buffer.from(task.signatures[i]!)));
}
