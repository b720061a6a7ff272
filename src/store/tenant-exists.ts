import type { Sql } from '../sql.js';

/** Whether a tenant with this id exists (a cross-tenant lookup by design: it answers which tenant a request names). */
export async function tenantExists(sql: Sql, tenantId: string): Promise<boolean> {
  // Ids are short text without NUL; anything else cannot name a tenant and must not reach Postgres.
  if (tenantId.length === 0 || tenantId.length > 255 || tenantId.includes('\u0000')) return false;
  const rows = await sql`select 1 from tenants where id = ${tenantId}`;
  return rows.length > 0;
}
