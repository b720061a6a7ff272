import type { Db } from '../sql.js';

export interface PluginConfigRow {
  tenant_id: string; plugin_id: string; enabled: boolean; config: Record<string, unknown>;
  secrets_enc: Buffer | null; secret_names: string[]; updated_at: number;
}

/** Per-tenant plugin settings. A plugin without a row is enabled with its defaults. */
export class PluginConfigRepository {
  constructor(private readonly db: Db, private readonly tenantId: string) {}

  async get(pluginId: string): Promise<PluginConfigRow | null> {
    const [row] = await this.db<PluginConfigRow[]>`select * from plugin_configs where tenant_id = ${this.tenantId} and plugin_id = ${pluginId}`;
    return row ?? null;
  }

  list(): Promise<PluginConfigRow[]> {
    return this.db<PluginConfigRow[]>`select * from plugin_configs where tenant_id = ${this.tenantId} order by plugin_id`;
  }

  /** Whether the plugin is on for this tenant (on unless a row says otherwise). */
  async enabled(pluginId: string): Promise<boolean> {
    const [row] = await this.db<{ enabled: boolean }[]>`select enabled from plugin_configs where tenant_id = ${this.tenantId} and plugin_id = ${pluginId}`;
    return row?.enabled ?? true;
  }

  /** The plugins switched off for this tenant. */
  async disabled(): Promise<string[]> {
    const rows = await this.db<{ plugin_id: string }[]>`select plugin_id from plugin_configs where tenant_id = ${this.tenantId} and not enabled`;
    return rows.map((r) => r.plugin_id);
  }

  async setEnabled(pluginId: string, enabled: boolean): Promise<PluginConfigRow> {
    const [row] = await this.db<PluginConfigRow[]>`
      insert into plugin_configs (tenant_id, plugin_id, enabled) values (${this.tenantId}, ${pluginId}, ${enabled})
      on conflict (tenant_id, plugin_id) do update set enabled = excluded.enabled, updated_at = now_ms() returning *`;
    return row!;
  }

  /** Replaces the settings; `secretsEnc` undefined keeps the sealed secrets. */
  async setConfig(pluginId: string, config: Record<string, unknown>, secrets: { enc: Buffer | null; names: string[] } | undefined): Promise<PluginConfigRow> {
    const sql = this.db;
    const [row] = await sql<PluginConfigRow[]>`
      insert into plugin_configs (tenant_id, plugin_id, config, secrets_enc, secret_names)
      values (${this.tenantId}, ${pluginId}, ${sql.json(config as never)}, ${secrets?.enc ?? null}, ${secrets?.names ?? []})
      on conflict (tenant_id, plugin_id) do update set config = excluded.config,
        secrets_enc = ${secrets ? sql`excluded.secrets_enc` : sql`plugin_configs.secrets_enc`},
        secret_names = ${secrets ? sql`excluded.secret_names` : sql`plugin_configs.secret_names`}, updated_at = now_ms()
      returning *`;
    return row!;
  }
}
