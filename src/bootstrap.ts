import type { Config } from './config.js';
import type { Sql } from './store/sql.js';

export const DEFAULT_TENANT_ID = 'default';

export interface BootstrapResult {
  issuer: string;
  tenant_id: string;
  [k: string]: unknown;
}

/** Idempotently creates the default tenant (and, as features land, its admin and demo clients). */
export async function bootstrap(config: Config, sql: Sql): Promise<BootstrapResult> {
  await sql`insert into tenants (id, name) values (${DEFAULT_TENANT_ID}, 'Default tenant') on conflict (id) do nothing`;
  return { issuer: config.issuer, tenant_id: DEFAULT_TENANT_ID };
}
