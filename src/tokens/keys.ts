import { createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK } from 'jose';
import { ServiceUnavailable } from '../errors.js';
import type { Sql } from '../sql.js';
import { decrypt, deriveKey, encrypt } from './secrets.js';
import { setSigningKeyCreated } from '../metrics.js';

export type SigningAlg = 'RS256' | 'ES256' | 'PS256';

export interface VerifyKey {
  kid: string;
  alg: SigningAlg;
  publicKey: KeyObject;
}

export interface SigningKey extends VerifyKey {
  /** PKCS#8 DER of the private key, handed to crypto threads (which import it once per kid). */
  pkcs8: Buffer;
  privateKey: KeyObject;
}

interface KeyRow {
  kid: string; alg: SigningAlg; public_jwk: JsonWebKey; private_key_enc: Buffer; status: 'next' | 'active' | 'retired';
  verify_until: number | null; created_at: number;
}

/**
 * Generates a key pair for the algorithm and stores it encrypted with the given status. Its kid is the
 * RFC 7638 thumbprint of the public key, so any client can recompute and check it.
 */
export async function createKey(sql: Sql, kek: Buffer, alg: SigningAlg, status: 'next' | 'active'): Promise<string> {
  const pair = alg === 'ES256'
    ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
    : generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = await exportJWK(pair.publicKey);
  const kid = await calculateJwkThumbprint(jwk, 'sha256');
  const der = pair.privateKey.export({ format: 'der', type: 'pkcs8' });
  const enc = encrypt(deriveKey(kek, 'signing-keys'), der, kid);
  await sql`insert into signing_keys (kid, alg, public_jwk, private_key_enc, status, activated_at)
            values (${kid}, ${alg}, ${sql.json(jwk as never)}, ${enc}, ${status}, ${status === 'active' ? Date.now() : null})`;
  return kid;
}

/**
 * Makes sure an active key and a published next key exist for the algorithm (first start).
 * Runs under an advisory lock so processes starting together create one key, not several.
 */
export async function ensureKeys(sql: Sql, kek: Buffer, alg: SigningAlg): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(7414200002)`;
    const rows = await tx<{ status: string }[]>`select status from signing_keys where alg = ${alg} and status in ('active', 'next')`;
    const txSql = tx as unknown as Sql;
    if (!rows.some((r) => r.status === 'active')) await createKey(txSql, kek, alg, 'active');
    if (!rows.some((r) => r.status === 'next')) await createKey(txSql, kek, alg, 'next');
  });
}

/**
 * Rotation: the published next key starts signing, the active key retires but stays in the JWKS until
 * every token it signed has expired (maxTokenTtlSeconds), and a fresh next key is published.
 */
export async function rotateKeys(sql: Sql, kek: Buffer, alg: SigningAlg, maxTokenTtlSeconds: number): Promise<{ active: string; next: string; retired: string | null }> {
  await ensureKeys(sql, kek, alg);
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(7414200002)`;
    const now = Date.now();
    const [old] = await tx<{ kid: string }[]>`update signing_keys set status = 'retired', retired_at = ${now}, verify_until = ${now + maxTokenTtlSeconds * 1000}
                                              where alg = ${alg} and status = 'active' returning kid`;
    const [act] = await tx<{ kid: string }[]>`update signing_keys set status = 'active', activated_at = ${now}
                                              where kid = (select kid from signing_keys where alg = ${alg} and status = 'next' order by created_at limit 1) returning kid`;
    const next = await createKey(tx as unknown as Sql, kek, alg, 'next');
    await tx`delete from signing_keys where status = 'retired' and verify_until < ${now}`;
    return { active: act!.kid, next, retired: old?.kid ?? null };
  }) as Promise<{ active: string; next: string; retired: string | null }>;
}

/**
 * The active signing key cannot be decrypted with this process's KEY_ENCRYPTION_KEY (it was stored under
 * another one). At start this is a configuration error no restart can mend (src/main.ts exits with
 * EXIT_CONFIG); on a reload the ring stops issuing and the process reports not ready.
 */
export class SigningKeyUndecryptable extends Error {
  constructor(readonly kid: string, cause: unknown) {
    super(`cannot decrypt signing key ${kid}: KEY_ENCRYPTION_KEY is not the key it was stored with`, { cause });
    this.name = 'SigningKeyUndecryptable';
  }
}

/** The keys a process signs and verifies with, loaded from Postgres and refreshed on a timer or on notice. */
export class KeyRing {
  private byKid = new Map<string, VerifyKey>();
  private active: SigningKey | undefined;
  private jwksJson = '{"keys":[]}';
  /** Why the ring cannot sign (the current key is not one this process can use); undefined when it can. */
  private unusable: string | undefined = 'signing keys not loaded yet';

  constructor(private readonly sql: Sql, private readonly kek: Buffer, readonly alg: SigningAlg) {}

  /**
   * Reads the key set. Public keys (verification, JWKS) always follow the database. When the current
   * signing key cannot be used here, the ring keeps no signing key at all rather than the previous one:
   * a process that silently went on signing with a retired key would hide the failed rotation (and a key
   * is often rotated because it must stop signing). Issuance then answers 503 and /readyz says why.
   * A failed query leaves everything as it was (the next reload retries). Throws in both cases.
   */
  async load(): Promise<void> {
    const rows = await this.sql<KeyRow[]>`select kid, alg, public_jwk, private_key_enc, status, verify_until, created_at from signing_keys
                                           where status in ('active', 'next') or verify_until > ${Date.now()} order by created_at`;
    const byKid = new Map<string, VerifyKey>();
    let active: SigningKey | undefined;
    let failure: Error | undefined;
    const dk = deriveKey(this.kek, 'signing-keys');
    const jwks: JsonWebKey[] = [];
    for (const r of rows) {
      const publicKey = createPublicKey({ key: r.public_jwk, format: 'jwk' });
      byKid.set(r.kid, { kid: r.kid, alg: r.alg, publicKey });
      // Re-exported from the public key object: only public members can reach the JWKS, whatever the row holds.
      jwks.push({ ...(await exportJWK(publicKey)), kid: r.kid, alg: r.alg, use: 'sig' });
      if (r.status === 'active' && r.alg === this.alg) {
        let pkcs8: Buffer;
        try { pkcs8 = decrypt(dk, r.private_key_enc, r.kid); } catch (err) {
          failure = new SigningKeyUndecryptable(r.kid, err);
          continue;
        }
        active = { kid: r.kid, alg: r.alg, publicKey, pkcs8, privateKey: createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }) };
        setSigningKeyCreated(r.alg, Number(r.created_at));
      }
    }
    if (!active && !failure) failure = new Error(`no active ${this.alg} signing key; run svc migrate and start the service once`);
    this.byKid = byKid;
    this.active = active;
    this.jwksJson = JSON.stringify({ keys: jwks });
    this.unusable = failure?.message;
    if (failure) throw failure;
  }

  /** Why this process cannot issue tokens now, or undefined when it can (readiness, issuance). */
  problem(): string | undefined {
    return this.unusable;
  }

  /** Throws 503 while the current key cannot be used here (see load). */
  assertCanSign(): void {
    if (!this.active) throw new ServiceUnavailable('Token issuance is unavailable on this server; retry shortly.', 5);
  }

  /** The key new tokens are signed with. */
  signingKey(): SigningKey {
    this.assertCanSign();
    return this.active!;
  }

  /** Only keys of our own set are ever used for verification (RFC 8725 3.10: never a key from the token). */
  verifyKey(kid: string): VerifyKey | undefined {
    return this.byKid.get(kid);
  }

  jwks(): string {
    return this.jwksJson;
  }
}
