import type { VerifyKey } from './keys.js';

/**
 * Token strings whose signature this process has already verified, with the key object that verified
 * them. A subject token is often exchanged many times in its life (a gateway exchanging one user's
 * token for each downstream audience), and an Ed25519 verification costs ~120 µs of the HTTP thread,
 * four RS256 verifications (perf/RESULTS.md run 83). Sound because an entry is found only by the
 * identical string (header, claims and signature alike) and honoured only while the key ring still
 * hands out the very key object that verified it (a reload or a dropped key misses). Claims (expiry,
 * issuer, type) and revocation are still checked on every use by the callers. Bounded: the oldest
 * entry goes first.
 */
export class VerifiedTokens {
  private readonly entries = new Map<string, VerifyKey>();

  constructor(private readonly max = 10_000) {}

  has(token: string, key: VerifyKey): boolean {
    return this.entries.get(token) === key;
  }

  add(token: string, key: VerifyKey): void {
    if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(token, key);
  }

  get size(): number { return this.entries.size; }
}
