/**
 * The seam between the blind index (users found by HMAC of their normalized email) and the lookup-HMAC
 * key rotation. The index writes an entry under every key of `writeKeys()` and looks up under every key of
 * `readKeys()`; outside a rotation both hold the one current key. A rotation changes what they return
 * (dual write, dual read, ...) without the index knowing about states.
 *
 * Index entries are rows of `user_email_index (tenant_id, generation, bidx, user_id)`, unique per
 * (tenant_id, generation, bidx), so entries of two generations coexist during a rotation.
 */
export type LookupSlot = 'A' | 'B';

export interface LookupKey {
  readonly generation: number;
  readonly keyId: string;
  readonly slot: LookupSlot;
  /** sha256 hex of the key material: the only form in which a key may be shown or stored in clear. */
  readonly fingerprint: string;
  /** Key material. Never logged, never returned, never persisted unsealed. */
  readonly key: Buffer;
}

export interface LookupKeyring {
  /** Keys an index write must write under (one, or two during activation_dual_write). */
  writeKeys(): readonly LookupKey[];
  /** Keys a lookup must try (one, or two from activation_dual_write through grace). */
  readKeys(): readonly LookupKey[];
}
