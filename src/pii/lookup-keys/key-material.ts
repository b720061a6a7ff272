import { randomBytes } from 'node:crypto';
import { initialLookupKey, keyFingerprint } from '../blind-index.js';
import type { LookupKey, LookupSlot } from '../keyring.js';
import { decrypt, deriveKey, encrypt } from '../../tokens/secrets.js';

/** A key row of the control plane (lookup_hmac_keys): metadata, and sealed material when generated here. */
export interface KeyRow {
  generation: number; key_id: string; slot: LookupSlot; fingerprint: string;
  source: 'initial' | 'environment' | 'generated'; sealed: Buffer | null; status: 'current' | 'candidate' | 'retired';
}

/** A key whose material this process could not find, or found with another fingerprint than the control plane's. */
export class KeyUnavailable extends Error {}

const sealingKey = (kek: Buffer) => deriveKey(kek, 'lookup-hmac-seal');
const aad = (generation: number) => `lookup-hmac:${generation}`;

/** Fresh key material for a candidate, sealed for the control plane. */
export function generateKey(kek: Buffer, generation: number): { key: Buffer; sealed: Buffer; fingerprint: string } {
  const key = randomBytes(32);
  return { key, sealed: encrypt(sealingKey(kek), key, aad(generation)), fingerprint: keyFingerprint(key) };
}

/** The material of LOOKUP_HMAC_KEY_<slot> (64 hex), if set. */
export function environmentKey(slot: LookupSlot, env: NodeJS.ProcessEnv = process.env): Buffer | null {
  const hex = env[`LOOKUP_HMAC_KEY_${slot}`];
  return hex && /^[0-9a-fA-F]{64}$/.test(hex) ? Buffer.from(hex, 'hex') : null;
}

/**
 * The material of a key row, from wherever its source says, checked against the row's fingerprint: a
 * process whose environment holds another key must not index with it (its reports show the mismatch).
 */
export function loadKey(row: KeyRow, kek: Buffer, env: NodeJS.ProcessEnv = process.env): LookupKey {
  let key: Buffer | null;
  if (row.source === 'generated') {
    if (!row.sealed) throw new KeyUnavailable(`lookup key generation ${row.generation} has no material (retired)`);
    key = decrypt(sealingKey(kek), row.sealed, aad(row.generation));
  } else if (row.source === 'initial') key = initialLookupKey(kek, env).key;
  else key = environmentKey(row.slot, env);
  if (!key) throw new KeyUnavailable(`LOOKUP_HMAC_KEY_${row.slot} is not set in this process`);
  const fingerprint = keyFingerprint(key);
  if (fingerprint !== row.fingerprint) throw new KeyUnavailable(`lookup key generation ${row.generation} has another fingerprint here (${fingerprint.slice(0, 12)}…) than in the control plane`);
  return { generation: row.generation, keyId: row.key_id, slot: row.slot, fingerprint, key };
}

/** What every environment starts with before any rotation: generation 1 in slot A. */
export function initialKeyRow(kek: Buffer, env: NodeJS.ProcessEnv = process.env): KeyRow {
  const k = initialLookupKey(kek, env);
  return { generation: 1, key_id: k.keyId, slot: 'A', fingerprint: k.fingerprint, source: 'initial', sealed: null, status: 'current' };
}
