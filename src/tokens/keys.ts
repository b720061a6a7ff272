import { createPrivateKey, createPublicKey, generateKeyPair, type JsonWebKey, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { calculateJwkThumbprint, exportJWK } from 'jose';
import { liveTenantKeys, tenantsStillSharing, type TenantKeyRow } from '../cross-tenant/signing-keys.js';
import { ServiceUnavailable } from '../errors.js';
import type { Sql } from '../sql.js';
import { keyAlgOf, namesOf, type SigningAlg } from './algorithms.js';
import { decrypt, deriveKey, encrypt } from './secrets.js';
import { setSigningKeyCreated, setTenantSigningKeysOldest } from '../metrics.js';

export type { SigningAlg } from './algorithms.js';

export interface VerifyKey {
  kid: string;
  alg: SigningAlg;
  publicKey: KeyObject;
  /** The tenant whose key this is; null for the deployment's keys (tenants without `signing_algs`). */
  tenant: string | null;
}

export interface SigningKey extends VerifyKey {
  /** PKCS#8 DER of the private key, handed to crypto threads (which import it once per kid). */
  pkcs8: Buffer;
  privateKey: KeyObject;
}

/**
 * How long a key that stops signing keeps verifying (and stays published): the longest token lifetime,
 * one day (docs/decisions.md), as `svc keys rotate` has always used.
 */
export const KEY_VERIFY_WINDOW_SECONDS = 86_400;

const generate = promisify(generateKeyPair);

/** A fresh key pair for the algorithm, made off the event loop (RSA generation takes tens of milliseconds). */
async function newPair(alg: SigningAlg): Promise<{ publicKey: KeyObject; privateKey: KeyObject }> {
  switch (alg) {
    case 'ES256': return generate('ec', { namedCurve: 'P-256' });
    case 'EdDSA': return generate('ed25519', undefined);
    default: return generate('rsa', { modulusLength: 2048 });
  }
}

/** A new key's public JWK, kid (RFC 7638 thumbprint, which any client can recompute) and encrypted private key. */
export async function newKeyMaterial(kek: Buffer, alg: SigningAlg): Promise<{ kid: string; jwk: JsonWebKey; enc: Buffer }> {
  const pair = await newPair(alg);
  const jwk = await exportJWK(pair.publicKey);
  const kid = await calculateJwkThumbprint(jwk, 'sha256');
  const der = pair.privateKey.export({ format: 'der', type: 'pkcs8' });
  return { kid, jwk, enc: encrypt(deriveKey(kek, 'signing-keys'), der, kid) };
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
  const { kid, jwk, enc } = await newKeyMaterial(kek, alg);
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

/** A tenant's own keys as the ring holds them: its algorithms in the setting's order and their active keys. */
interface TenantKeys {
  algs: SigningAlg[];
  /** Active key per algorithm; the private key is decrypted when it first signs. */
  active: Map<SigningAlg, { key: VerifyKey; enc: Buffer; signing?: SigningKey }>;
  /** Until when the tenant still accepts tokens of the deployment's keys (ms); 0 when it no longer does. */
  sharedUntil: number;
}

/**
 * The keys a process signs and verifies with, loaded from Postgres and refreshed on a timer or on notice:
 * the deployment's keys (signing_keys, `TOKEN_SIGNING_ALG`), which sign for tenants without `signing_algs`,
 * and each such tenant's own keys (tenant_signing_keys). Everything a request needs of them (the tenant's
 * algorithms, its signing key, a verification key, the JWKS) is answered from memory.
 */
export class KeyRing {
  private byKid = new Map<string, VerifyKey>();
  private active: SigningKey | undefined;
  private tenants = new Map<string, TenantKeys>();
  private jwksJson = '{"keys":[]}';
  /** Each published JWK with its owner, from which a tenant's JWKS is cut (and memoized until the next load). */
  private published: Array<{ tenant: string | null; jwks: JsonWebKey[] }> = [];
  private tenantJwks = new Map<string, string>();
  /** Why the ring cannot sign (the current key is not one this process can use); undefined when it can. */
  private unusable: string | undefined = 'signing keys not loaded yet';
  private readonly dk: Buffer;

  constructor(private readonly sql: Sql, kek: Buffer, readonly alg: SigningAlg) {
    this.dk = deriveKey(kek, 'signing-keys');
  }

  /**
   * Reads the key set. Public keys (verification, JWKS) always follow the database. When the deployment's
   * current signing key cannot be used here, the ring keeps no such key at all rather than the previous one:
   * a process that silently went on signing with a retired key would hide the failed rotation (and a key
   * is often rotated because it must stop signing). Issuance then answers 503 and /readyz says why.
   * A failed query leaves everything as it was (the next reload retries). Throws in both cases.
   */
  async load(): Promise<void> {
    const now = Date.now();
    const [rows, tenantRows, sharing] = await Promise.all([
      this.sql<KeyRow[]>`select kid, alg, public_jwk, private_key_enc, status, verify_until, created_at from signing_keys
                         where status in ('active', 'next') or verify_until > ${now} order by created_at`,
      liveTenantKeys(this.sql, now),
      tenantsStillSharing(this.sql, now),
    ]);
    const byKid = new Map<string, VerifyKey>();
    let active: SigningKey | undefined;
    let failure: Error | undefined;
    const published: Array<{ tenant: string | null; jwks: JsonWebKey[] }> = [];
    for (const r of rows) {
      const key = await this.publish(byKid, published, r.kid, r.alg, r.public_jwk, null);
      if (r.status === 'active' && r.alg === this.alg) {
        let pkcs8: Buffer;
        try { pkcs8 = decrypt(this.dk, r.private_key_enc, r.kid); } catch (err) {
          failure = new SigningKeyUndecryptable(r.kid, err);
          continue;
        }
        active = { ...key, pkcs8, privateKey: createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }) };
        setSigningKeyCreated(r.alg, Number(r.created_at));
      }
    }
    const tenants = new Map<string, TenantKeys>();
    const oldestTenantKey = new Map<SigningAlg, number>();
    for (const r of tenantRows as TenantKeyRow[]) {
      const alg = keyAlgOf(r.alg);
      if (!alg) continue;
      const key = await this.publish(byKid, published, r.kid, alg, r.public_jwk as JsonWebKey, r.tenant_id);
      if (r.status !== 'active') continue;
      const created = Number(r.created_at);
      if (created < (oldestTenantKey.get(alg) ?? Infinity)) oldestTenantKey.set(alg, created);
      let t = tenants.get(r.tenant_id);
      if (!t) tenants.set(r.tenant_id, t = { algs: [], active: new Map(), sharedUntil: 0 });
      // Rows come ordered by rank: the first active algorithm is the one the tenant signs with by default.
      t.algs.push(alg);
      t.active.set(alg, { key, enc: r.private_key_enc });
    }
    for (const s of sharing) { const t = tenants.get(s.id); if (t) t.sharedUntil = Number(s.shared_keys_until); }
    if (!active && !failure) failure = new Error(`no active ${this.alg} signing key; run svc migrate and start the service once`);
    setTenantSigningKeysOldest(oldestTenantKey);
    this.byKid = byKid;
    this.active = active;
    this.tenants = tenants;
    this.published = published;
    this.tenantJwks = new Map();
    this.jwksJson = JSON.stringify({ keys: published.flatMap((p) => p.jwks) });
    this.unusable = failure?.message;
    if (failure) throw failure;
  }

  /**
   * Adds a key to the verification map and the JWKS. The JWK is re-exported from the public key object,
   * so only public members can reach the JWKS, whatever the row holds; an Ed25519 key is published once
   * under each of its names (RFC 9864), so verifiers that match a token's alg to the JWK's find it either way.
   */
  private async publish(byKid: Map<string, VerifyKey>, published: Array<{ tenant: string | null; jwks: JsonWebKey[] }>, kid: string, alg: SigningAlg, jwk: JsonWebKey, tenant: string | null): Promise<VerifyKey> {
    const publicKey = createPublicKey({ key: jwk, format: 'jwk' });
    const key: VerifyKey = { kid, alg, publicKey, tenant };
    byKid.set(kid, key);
    const pub = await exportJWK(publicKey);
    published.push({ tenant, jwks: namesOf(alg).map((name) => ({ ...pub, kid, alg: name, use: 'sig' })) });
    return key;
  }

  /** Why this process cannot issue tokens now, or undefined when it can (readiness, issuance). */
  problem(): string | undefined {
    return this.unusable;
  }

  /** Throws 503 while the deployment's current key cannot be used here (see load). */
  assertCanSign(): void {
    if (!this.active) throw new ServiceUnavailable('Token issuance is unavailable on this server; retry shortly.', 5);
  }

  /** The algorithms a tenant signs with, its default first: its `signing_algs`, else the deployment's. */
  algsOf(tenant: string): readonly SigningAlg[] {
    return this.tenants.get(tenant)?.algs ?? [this.alg];
  }

  /** Whether the tenant signs with keys of its own (its `signing_algs`), not the deployment's. */
  hasOwnKeys(tenant: string): boolean {
    return this.tenants.has(tenant);
  }

  /**
   * The key a tenant's new token is signed with: of the algorithm asked for when the tenant enables it,
   * else of the tenant's default algorithm.
   */
  signingKey(tenant: string, alg?: SigningAlg): SigningKey {
    const t = this.tenants.get(tenant);
    if (!t) { this.assertCanSign(); return this.active!; }
    const slot = (alg && t.active.get(alg)) || t.active.get(t.algs[0]!)!;
    if (!slot.signing) {
      let pkcs8: Buffer;
      try { pkcs8 = decrypt(this.dk, slot.enc, slot.key.kid); } catch {
        throw new ServiceUnavailable('Token issuance is unavailable on this server; retry shortly.', 5);
      }
      slot.signing = { ...slot.key, pkcs8, privateKey: createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }) };
    }
    return slot.signing;
  }

  /** A key of our own set by kid, whoever's it is (the JWKS view); verification goes through verifyKeyFor. */
  verifyKey(kid: string): VerifyKey | undefined {
    return this.byKid.get(kid);
  }

  /**
   * The key that may verify a token of `tenant` (its `tenant` claim), or undefined: only keys of our own
   * set are ever used (RFC 8725 3.10: never a key from the token), a tenant's own key only for that
   * tenant's tokens, and the deployment's keys only for tenants that sign with them (or moved off them
   * less than the verification window ago).
   */
  verifyKeyFor(kid: string, tenant: unknown, now = Date.now()): VerifyKey | undefined {
    const key = this.byKid.get(kid);
    if (!key) return undefined;
    if (key.tenant !== null) return key.tenant === tenant ? key : undefined;
    const t = typeof tenant === 'string' ? this.tenants.get(tenant) : undefined;
    return !t || t.sharedUntil > now ? key : undefined;
  }

  /** The JWKS of every key (no tenant), or of the keys that verify one tenant's tokens. */
  jwks(tenant?: string): string {
    if (tenant === undefined) return this.jwksJson;
    let out = this.tenantJwks.get(tenant);
    if (out === undefined) {
      const t = this.tenants.get(tenant);
      const shared = !t || t.sharedUntil > Date.now();
      out = JSON.stringify({ keys: this.published.filter((p) => (p.tenant === null ? shared : p.tenant === tenant)).flatMap((p) => p.jwks) });
      // Only tenants with keys of their own are remembered, so asking for arbitrary names cannot grow the map.
      if (t) this.tenantJwks.set(tenant, out);
    }
    return out;
  }
}
