import t from 'tap';
import { Store, type TenantStore } from '../../src/store/index.js';
import { createSql, type Sql } from '../../src/sql.js';
import { uniqueName } from './env.js';
import { PiiVault } from '../../src/pii/vault.js';
import { loadConfig } from '../../src/config.js';

export interface TwoTenants { sql: Sql; store: Store; tenantA: string; tenantB: string; A: TenantStore; B: TenantStore }

/**
 * Two fresh tenants in the test database and their tenant-bound stores, for the repository tests in the
 * manner of Hydra's persister_nid_test. `cleanup` runs before the tenants are deleted (rows of tables
 * that do not cascade with the tenant); the pool is closed when the file ends.
 */
export async function twoTenants(label: string, cleanup?: (sql: Sql, tenants: [string, string]) => Promise<unknown>): Promise<TwoTenants> {
  const sql = createSql({ databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/svc_test', databasePoolSize: 4 });
  const store = new Store(sql, PiiVault.fromConfig(loadConfig(), sql));
  const tenantA = uniqueName(`${label}-a`);
  const tenantB = uniqueName(`${label}-b`);
  await sql`insert into tenants (id, name) values (${tenantA}, ${tenantA}), (${tenantB}, ${tenantB})`;
  t.teardown(async () => {
    await cleanup?.(sql, [tenantA, tenantB]);
    await sql`delete from refresh_tokens where tenant_id in (${tenantA}, ${tenantB})`;
    await sql`delete from tenants where id in (${tenantA}, ${tenantB})`;
    await sql.end({ timeout: 5 });
  });
  return { sql, store, tenantA, tenantB, A: store.forTenant(tenantA), B: store.forTenant(tenantB) };
}
