import type { Sql, TxSql } from '../../store/sql.js';
import type { Cursor } from '../pagination.js';

type Db = Sql | TxSql;

export interface PolicyCondition { type: string; params: Record<string, unknown> }
export interface PolicyRow {
  tenant_id: string; id: string; name: string; description: string | null; priority: number; effect: 'allow' | 'deny'; conditions: PolicyCondition[];
  resource_types: string[]; actions: string[]; enabled: boolean; extra: Record<string, unknown>; created_by: string | null; updated_by: string | null;
  created_at: number; updated_at: number;
}
export interface PolicyInput {
  name: string; description?: string | null; priority: number; effect: 'allow' | 'deny'; conditions: PolicyCondition[]; resource_types: string[];
  actions: string[]; enabled: boolean; extra: Record<string, unknown>;
}

export async function insertPolicy(sql: Db, tenantId: string, id: string, p: PolicyInput, by: string): Promise<PolicyRow> {
  const [row] = await sql<PolicyRow[]>`insert into admin_policies (tenant_id, id, name, description, priority, effect, conditions, resource_types, actions, enabled, extra, created_by, updated_by)
    values (${tenantId}, ${id}, ${p.name}, ${p.description ?? null}, ${p.priority}, ${p.effect}, ${sql.json(p.conditions as never)}, ${p.resource_types}, ${p.actions},
      ${p.enabled}, ${sql.json(p.extra as never)}, ${by}, ${by}) returning *`;
  return row!;
}

export async function getPolicy(sql: Db, tenantId: string, id: string, lock = false): Promise<PolicyRow | null> {
  const [row] = await sql<PolicyRow[]>`select * from admin_policies where tenant_id = ${tenantId} and id = ${id} ${lock ? sql`for update` : sql``}`;
  return row ?? null;
}

export async function listPolicies(sql: Db, tenantId: string, f: { limit: number; cursor?: Cursor | undefined; enabled?: boolean | undefined; effect?: string | undefined }): Promise<PolicyRow[]> {
  return sql<PolicyRow[]>`select * from admin_policies where tenant_id = ${tenantId}
      ${f.cursor ? sql`and (created_at, id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
      ${f.enabled !== undefined ? sql`and enabled = ${f.enabled}` : sql``}
      ${f.effect ? sql`and effect = ${f.effect}` : sql``}
    order by created_at desc, id desc limit ${f.limit + 1}`;
}

/** Replaces the policy's fields with those of `p` (a merged full input). */
export async function replacePolicy(sql: Db, tenantId: string, id: string, p: PolicyInput, by: string): Promise<PolicyRow> {
  const [row] = await sql<PolicyRow[]>`update admin_policies set name = ${p.name}, description = ${p.description ?? null}, priority = ${p.priority},
      effect = ${p.effect}, conditions = ${sql.json(p.conditions as never)}, resource_types = ${p.resource_types}, actions = ${p.actions},
      enabled = ${p.enabled}, extra = ${sql.json(p.extra as never)}, updated_by = ${by}, updated_at = now_ms()
    where tenant_id = ${tenantId} and id = ${id} returning *`;
  return row!;
}

export async function deletePolicy(sql: Db, tenantId: string, id: string): Promise<PolicyRow | null> {
  const [row] = await sql<PolicyRow[]>`delete from admin_policies where tenant_id = ${tenantId} and id = ${id} returning *`;
  return row ?? null;
}

/** Enabled policies of a tenant that name this resource type and action (or `*`), highest priority first. */
export async function applicablePolicies(sql: Db, tenantId: string, resourceType: string, action: string): Promise<PolicyRow[]> {
  return sql<PolicyRow[]>`select * from admin_policies where tenant_id = ${tenantId} and enabled
      and (resource_types && ${[resourceType, '*']}::text[]) and (actions && ${[action, '*']}::text[])
    order by priority desc, effect asc, id`;
}
