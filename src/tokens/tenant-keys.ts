import type { Sql } from '../sql.js';
import type { SigningAlg } from './algorithms.js';
import { KEY_VERIFY_WINDOW_SECONDS, newKeyMaterial } from './keys.js';

type Tx = Sql;

interface OwnKey { kid: string; alg: SigningAlg; status: 'active' | 'next'; rank: number | null }

async function insertKey(tx: Tx, kek: Buffer, tenantId: string, alg: SigningAlg, rank: number, status: 'active' | 'next', now: number): Promise<void> {
  const { kid, jwk, enc } = await newKeyMaterial(kek, alg);
  await tx`insert into tenant_signing_keys (tenant_id, kid, alg, rank, public_jwk, private_key_enc, status, activated_at)
           values (${tenantId}, ${kid}, ${alg}, ${rank}, ${tx.json(jwk as never)}, ${enc}, ${status}, ${status === 'active' ? now : null})`;
}

/**
 * Makes a tenant's own keys follow its `signing_algs` setting, in the caller's transaction: each algorithm
 * it enables gets an active and a published next key (created when missing, ranked in the setting's order),
 * and the keys of an algorithm it no longer enables retire, still published and verifying the tenant's
 * tokens until the longest of them has expired. A tenant moving off the deployment's keys accepts tokens
 * of those for the same window; an absent or empty setting hands the tenant back to the deployment's keys.
 * Returns whether any key changed (then the caller announces it, so every process reloads its ring).
 */
export async function syncTenantKeys(tx: Tx, kek: Buffer, tenantId: string, algs: readonly SigningAlg[] | undefined, now = Date.now()): Promise<boolean> {
  const want = algs ?? [];
  const own = await tx<OwnKey[]>`select kid, alg, status, rank from tenant_signing_keys
                                 where tenant_id = ${tenantId} and status in ('active', 'next') for update`;
  const until = now + KEY_VERIFY_WINDOW_SECONDS * 1000;
  let changed = false;
  const gone = own.filter((k) => !want.includes(k.alg));
  if (gone.length) {
    await tx`update tenant_signing_keys set status = 'retired', rank = null, retired_at = ${now}, verify_until = ${until}
             where tenant_id = ${tenantId} and kid = any(${gone.map((k) => k.kid)})`;
    changed = true;
  }
  for (const [rank, alg] of want.entries()) {
    const mine = own.filter((k) => k.alg === alg);
    if (mine.some((k) => k.rank !== rank)) {
      await tx`update tenant_signing_keys set rank = ${rank} where tenant_id = ${tenantId} and alg = ${alg} and status in ('active', 'next')`;
      changed = true;
    }
    if (!mine.some((k) => k.status === 'active')) { await insertKey(tx, kek, tenantId, alg, rank, 'active', now); changed = true; }
    if (!mine.some((k) => k.status === 'next')) { await insertKey(tx, kek, tenantId, alg, rank, 'next', now); changed = true; }
  }
  const hadOwn = own.some((k) => k.status === 'active');
  if (!hadOwn && want.length) await tx`update tenants set shared_keys_until = ${until} where id = ${tenantId}`;
  if (hadOwn && !want.length) await tx`update tenants set shared_keys_until = null where id = ${tenantId}`;
  await tx`delete from tenant_signing_keys where tenant_id = ${tenantId} and status = 'retired' and verify_until < ${now}`;
  return changed;
}

/**
 * Rotation of one tenant's keys, every algorithm it enables: the published next key starts signing, the
 * active one retires (published and verifying for the window) and a fresh next key is published.
 */
export async function rotateTenantKeys(sql: Sql, kek: Buffer, tenantId: string, now = Date.now()): Promise<Array<{ alg: SigningAlg; active: string; next: string; retired: string }>> {
  return sql.begin(async (t) => {
    const tx = t as unknown as Tx;
    const own = await tx<OwnKey[]>`select kid, alg, status, rank from tenant_signing_keys
                                   where tenant_id = ${tenantId} and status in ('active', 'next') order by rank, created_at for update`;
    const out: Array<{ alg: SigningAlg; active: string; next: string; retired: string }> = [];
    for (const act of own.filter((k) => k.status === 'active')) {
      const nxt = own.find((k) => k.alg === act.alg && k.status === 'next');
      if (!nxt) continue;
      await tx`update tenant_signing_keys set status = 'retired', rank = null, retired_at = ${now}, verify_until = ${now + KEY_VERIFY_WINDOW_SECONDS * 1000}
               where tenant_id = ${tenantId} and kid = ${act.kid}`;
      await tx`update tenant_signing_keys set status = 'active', activated_at = ${now} where tenant_id = ${tenantId} and kid = ${nxt.kid}`;
      const { kid, jwk, enc } = await newKeyMaterial(kek, act.alg);
      await tx`insert into tenant_signing_keys (tenant_id, kid, alg, rank, public_jwk, private_key_enc, status)
               values (${tenantId}, ${kid}, ${act.alg}, ${act.rank}, ${tx.json(jwk as never)}, ${enc}, 'next')`;
      out.push({ alg: act.alg, active: nxt.kid, next: kid, retired: act.kid });
    }
    await tx`delete from tenant_signing_keys where tenant_id = ${tenantId} and status = 'retired' and verify_until < ${now}`;
    return out;
  }) as Promise<Array<{ alg: SigningAlg; active: string; next: string; retired: string }>>;
}
