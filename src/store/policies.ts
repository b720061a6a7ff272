import type { Cursor } from './cursor.js';
import type { Db } from '../sql.js';

export interface PolicyCondition { type: string; params: Record<string, unknown> }
export interface PolicyRow {
  tenant_id: string; id: string; name: string; description: string | null; priority: number; effect: 'allow' | 'deny'; conditions: PolicyCondition[];
  resource_types: string[]; actions: string[]; enabled: boolean; extra: Record<string, unknown>; created_by: string | null; updated_by: string | null;
  created_at: number; updated_at: number;
}
export interface NewPolicy {
  name: string; description?: string | null | undefined; priority: number; effect: 'allow' | 'deny'; conditions: PolicyCondition[];
  resource_types: string[]; actions: string[]; enabled?: boolean | undefined; extra: Record<string, unknown>;
}
/** Fields given replace the stored ones; `extra` is merged into the stored extra properties. */
export type PolicyPatch = { [K in keyof NewPolicy]?: NewPolicy[K] | undefined };

export interface PolicyFilter { limit: number; cursor?: Cursor | undefined; enabled?: boolean | undefined; effect?: string | undefined }

/** Admin policies of one tenant; `applicablePolicies` is what the policy engine reads on every admin request. */
export class PolicyRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  async insert(id: string, p: NewPolicy, by: string): Promise<PolicyRow> {
    const sql = this.db;
    const [row] = await sql<PolicyRow[]>`insert into admin_policies (tenant_id, id, name, description, priority, effect, conditions, resource_types, actions, enabled, extra, created_by, updated_by)
      values (${this.tenantId}, ${id}, ${p.name}, ${p.description ?? null}, ${p.priority}, ${p.effect}, ${sql.json(p.conditions as never)}, ${p.resource_types},
        ${p.actions}, ${p.enabled ?? false}, ${sql.json(p.extra as never)}, ${by}, ${by}) returning *`;
    return row!;
  }

  /** One policy; `lock` holds its row until the transaction ends (read-modify-write). */
  async get(id: string, lock = false): Promise<PolicyRow | null> {
    const sql = this.db;
    const [row] = await sql<PolicyRow[]>`select * from admin_policies where tenant_id = ${this.tenantId} and id = ${id} ${lock ? sql`for update` : sql``}`;
    return row ?? null;
  }

  /** Newest first, limit + 1 rows (for `page()`). */
  list(f: PolicyFilter): Promise<PolicyRow[]> {
    const sql = this.db;
    return sql<PolicyRow[]>`select * from admin_policies where tenant_id = ${this.tenantId}
        ${f.cursor ? sql`and (created_at, id) < (${f.cursor.createdAt}, ${f.cursor.id})` : sql``}
        ${f.enabled !== undefined ? sql`and enabled = ${f.enabled}` : sql``}
        ${f.effect ? sql`and effect = ${f.effect}` : sql``}
      order by created_at desc, id desc limit ${f.limit + 1}`;
  }

  /** Applies the fields given; null when the policy is not the tenant's. */
  async update(id: string, p: PolicyPatch, by: string): Promise<PolicyRow | null> {
    const sql = this.db;
    const [row] = await sql<PolicyRow[]>`update admin_policies set
        name = ${p.name !== undefined ? p.name : sql`name`},
        description = ${p.description !== undefined ? p.description : sql`description`},
        priority = ${p.priority !== undefined ? p.priority : sql`priority`},
        effect = ${p.effect !== undefined ? p.effect : sql`effect`},
        conditions = ${p.conditions !== undefined ? sql.json(p.conditions as never) : sql`conditions`},
        resource_types = ${p.resource_types !== undefined ? p.resource_types : sql`resource_types`},
        actions = ${p.actions !== undefined ? p.actions : sql`actions`},
        enabled = ${p.enabled !== undefined ? p.enabled : sql`enabled`},
        extra = extra || ${sql.json((p.extra ?? {}) as never)}, updated_by = ${by}, updated_at = now_ms()
      where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return row ?? null;
  }

  async delete(id: string): Promise<PolicyRow | null> {
    const [row] = await this.db<PolicyRow[]>`delete from admin_policies where tenant_id = ${this.tenantId} and id = ${id} returning *`;
    return row ?? null;
  }

  /** Enabled policies that name this resource type and action (or `*`), highest priority first, deny before allow. */
  applicablePolicies(resourceType: string, action: string): Promise<PolicyRow[]> {
    return this.db<PolicyRow[]>`select * from admin_policies where tenant_id = ${this.tenantId} and enabled
        and (resource_types && ${[resourceType, '*']}::text[]) and (actions && ${[action, '*']}::text[])
      order by priority desc, effect asc, id`;
  }
}
