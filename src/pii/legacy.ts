import { byteaArray, type Sql } from '../sql.js';
import { legacyUserTenants, lockLegacyUsers } from '../cross-tenant/pii.js';
import type { PiiVault } from './vault.js';

/**
 * Seals users written before migration 0110 (email, name and metadata still in `users`): each gets its
 * default-partition PII row and index entries, and its clear columns are emptied, in batches, each batch
 * one transaction (a crash resumes with the rows still in clear). Run by `svc migrate`. Returns the count.
 */
export async function sealLegacyUsers(sql: Sql, vault: PiiVault, batch = 1000): Promise<number> {
  let total = 0;
  // Data keys are created on the pool before the transactions (which may hold its only connection).
  for (const tenantId of await legacyUserTenants(sql)) await vault.dataKey(tenantId);
  for (;;) {
    const n = await sql.begin(async (tx) => {
      const rows = await lockLegacyUsers(tx, batch);
      for (const r of rows) {
        const sealed = await vault.seal(r.tenant_id, r.id, { email: r.email, name: r.name, metadata: r.metadata ?? {} });
        const e = vault.writeEntries(r.email);
        await tx`insert into pii_default.user_pii (tenant_id, user_id, sealed) values (${r.tenant_id}, ${r.id}, ${sealed}) on conflict do nothing`;
        await tx`insert into user_email_index (tenant_id, generation, bidx, user_id)
          select ${r.tenant_id}, g, b, ${r.id} from unnest(${e.generations}::int[], ${byteaArray(tx, e.bidxs)}::bytea[]) as x(g, b) on conflict do nothing`;
        await tx`update users set email = null, name = null, metadata = '{}', pii_partition = 'default' where tenant_id = ${r.tenant_id} and id = ${r.id}`;
      }
      return rows.length;
    });
    total += n;
    if (n < batch) return total;
  }
}
