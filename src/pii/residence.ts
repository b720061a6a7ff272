import type { PiiRecord } from './sealing.js';

export type RuleOperator = 'eq' | 'ne' | 'in' | 'not_in';

/** A partition rule: users whose `attribute` matches go to `partition`. */
export interface PartitionRule {
  attribute: string;
  operator: RuleOperator;
  value: string | string[];
  partition: string;
  priority: number;
  enabled: boolean;
}

/** A tenant's partition settings (`tenant_pii_settings`). */
export interface PartitionSettings {
  /** Tenant policy: every new user of the tenant goes here (null: decide per user). */
  policy_partition: string | null;
  /** Whether a user's declared residence (`metadata.residence` naming a partition) counts. */
  use_residence: boolean;
  rules: PartitionRule[];
}

export const DEFAULT_SETTINGS: PartitionSettings = { policy_partition: null, use_residence: true, rules: [] };

/**
 * The value of a rule attribute for a user: `email_domain`, `residence` (metadata.residence), or
 * `metadata.<key>` (a top-level metadata field). Compared as lower-cased strings.
 */
export function attributeOf(u: PiiRecord, attribute: string): string | undefined {
  let v: unknown;
  if (attribute === 'email_domain') v = u.email.slice(u.email.lastIndexOf('@') + 1);
  else if (attribute === 'residence') v = u.metadata.residence;
  else if (attribute.startsWith('metadata.')) v = u.metadata[attribute.slice('metadata.'.length)];
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v).toLowerCase() : undefined;
}

function matches(r: PartitionRule, actual: string | undefined): boolean {
  const values = (Array.isArray(r.value) ? r.value : [r.value]).map((v) => v.toLowerCase());
  switch (r.operator) {
    case 'eq': return actual !== undefined && actual === values[0];
    case 'ne': return actual !== undefined && actual !== values[0];
    case 'in': return actual !== undefined && values.includes(actual);
    case 'not_in': return actual !== undefined && !values.includes(actual);
  }
}

/**
 * The partition of a new user, in the order: tenant policy, the user's declared residence,
 * enabled rules by priority (lowest number first, then as listed), `default`. A target that is not
 * available on this server is skipped (settings are checked on write, so that means it was removed).
 */
export function resolvePartition(s: PartitionSettings, u: PiiRecord, available: ReadonlySet<string>): string {
  if (s.policy_partition && available.has(s.policy_partition)) return s.policy_partition;
  if (s.use_residence) {
    const declared = attributeOf(u, 'residence');
    if (declared && available.has(declared)) return declared;
  }
  const rules = s.rules.map((r, i) => ({ r, i })).filter(({ r }) => r.enabled)
    .sort((a, b) => a.r.priority - b.r.priority || a.i - b.i);
  for (const { r } of rules) {
    if (available.has(r.partition) && matches(r, attributeOf(u, r.attribute))) return r.partition;
  }
  return 'default';
}
