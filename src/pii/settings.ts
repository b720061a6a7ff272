import { DEFAULT_SETTINGS, type PartitionSettings } from './residence.js';
import type { Db } from '../sql.js';

/** A tenant's PII partition settings (`tenant_pii_settings`); absent means the defaults. */
export class PiiSettingsRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  async get(): Promise<PartitionSettings & { updated_at: number | null }> {
    const [row] = await this.db<(PartitionSettings & { updated_at: number })[]>`
      select policy_partition, use_residence, rules, updated_at from tenant_pii_settings where tenant_id = ${this.tenantId}`;
    return row ? { ...row, updated_at: Number(row.updated_at) } : { ...DEFAULT_SETTINGS, updated_at: null };
  }

  async put(s: PartitionSettings): Promise<PartitionSettings & { updated_at: number }> {
    const [row] = await this.db<(PartitionSettings & { updated_at: number })[]>`
      insert into tenant_pii_settings (tenant_id, policy_partition, use_residence, rules)
      values (${this.tenantId}, ${s.policy_partition}, ${s.use_residence}, ${this.db.json(s.rules as never)})
      on conflict (tenant_id) do update set policy_partition = excluded.policy_partition, use_residence = excluded.use_residence,
        rules = excluded.rules, updated_at = now_ms()
      returning policy_partition, use_residence, rules, updated_at`;
    return { ...row!, updated_at: Number(row!.updated_at) };
  }

  /** Active users per partition (core rows: no personal data is read to count). */
  async activeCounts(): Promise<Map<string, number>> {
    const rows = await this.db<{ pii_partition: string; n: number }[]>`
      select pii_partition, count(*)::int as n from users where tenant_id = ${this.tenantId} and status = 'active' group by pii_partition`;
    return new Map(rows.map((r) => [r.pii_partition, r.n]));
  }
}
