import type { Deps } from '../deps.js';
import { NotFound, ValidationError, type Details } from '../errors.js';
import type { Route } from '../http/types.js';
import { readHealth } from '../plugins/health.js';
import { PLUGINS, pluginById, type Plugin } from '../plugins/registry.js';
import type { PluginConfigRow } from '../store/plugin-configs.js';
import { openSecret, sealSecret } from '../webhooks/secret-box.js';
import { adminRoute } from './route.js';

const READ = 'admin:plugins:read';
const WRITE = 'admin:plugins:write';
const tags = ['plugins'];
const MASK = '********';

const pluginNotFound = () => new NotFound('not_found', 'No such plugin.');
const mustPlugin = (id: string): Plugin => { const p = pluginById(id); if (!p) throw pluginNotFound(); return p; };
const aad = (tenantId: string, pluginId: string) => `plugin-config:${tenantId}:${pluginId}`;

/** A plugin with this tenant's settings; secret settings are masked. */
function pluginView(p: Plugin, row: PluginConfigRow | null | undefined) {
  const config: Record<string, string> = {};
  for (const [k, v] of Object.entries(row?.config ?? {})) config[k] = String(v);
  for (const k of row?.secret_names ?? []) config[k] = MASK;
  return {
    id: p.id, name: p.name, version: p.version, capabilities: p.capabilities, enabled: row?.enabled ?? true,
    settings: p.settings, config, updated_at: row ? Number(row.updated_at) : null,
  };
}

/** Plugins of the administration interface: list, get, settings, enable/disable (all audited) and the spec's cached health. */
export function pluginRoutes(deps: Deps): Route[] {
  const kek = deps.config.keyEncryptionKey;
  const toggle = (enabled: boolean) => adminRoute(deps, {
    method: 'POST', path: `/api/admin/plugins/:id/${enabled ? 'enable' : 'disable'}`, permission: WRITE, tags,
    summary: enabled ? 'Enable a plugin for this tenant' : 'Disable a plugin for this tenant (the mailer off: email sign-in answers 503)',
    response: { 200: 'plugins.plugin' }, errors: [404],
    audit: { action: `plugin.${enabled ? 'enable' : 'disable'}`, resourceType: 'plugin', severity: enabled ? 'info' : 'warn' },
    handler: async ({ deps, ctx, params, mutate }) => {
      const p = mustPlugin(params.id!);
      const view = await mutate(async (_tx, store) => {
        const before = await store.plugins.get(p.id);
        const row = await store.plugins.setEnabled(p.id, enabled);
        return { result: pluginView(p, row), resourceId: p.id, before: pluginView(p, before), after: pluginView(p, row) };
      });
      await deps.tokens.plugins.changed(ctx.tenantId, deps.trace);
      return { body: view };
    },
  });
  return [
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/plugins', permission: READ, tags,
      summary: 'List the plugins with this tenant\'s settings (secrets masked)', response: { 200: 'plugins.plugin-list' },
      handler: async ({ store }) => {
        const rows = new Map((await store.plugins.list()).map((r) => [r.plugin_id, r]));
        return { body: { items: PLUGINS.map((p) => pluginView(p, rows.get(p.id))) } };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/plugins/:id', permission: READ, tags,
      summary: 'Get a plugin with this tenant\'s settings (secrets masked)', response: { 200: 'plugins.plugin' }, errors: [404],
      handler: async ({ params, store }) => { const p = mustPlugin(params.id!); return { body: pluginView(p, await store.plugins.get(p.id)) }; },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/plugins/:id/health', permission: READ, tags,
      summary: 'Cached health of a plugin from its last periodic check; unknown when no check ran recently', response: { 200: 'plugins.health' }, errors: [404],
      handler: async ({ deps, params }) => {
        const p = mustPlugin(params.id!);
        return { body: { pluginId: p.id, health: await readHealth(deps.redis, p.id) } };
      },
    }),
    adminRoute(deps, {
      method: 'PUT', path: '/api/admin/plugins/:id/config', permission: WRITE, tags, body: 'plugins.config-update',
      summary: 'Replace this tenant\'s settings of a plugin (secret settings sealed; ones not given are kept; null removes)',
      response: { 200: 'plugins.plugin' }, errors: [404],
      audit: { action: 'plugin.configure', resourceType: 'plugin' },
      handler: async ({ ctx, params, body, mutate }) => {
        const p = mustPlugin(params.id!);
        const known = new Map(p.settings.map((s) => [s.name, s]));
        const details: Details = {};
        for (const k of Object.keys(body.config)) if (!known.has(k)) details[`config.${k}`] = ['is not a setting of this plugin'];
        if (Object.keys(details).length) throw new ValidationError(details);
        const view = await mutate(async (_tx, store) => {
          const cur = await store.plugins.get(p.id);
          const plain: Record<string, string> = {};
          const secrets: Record<string, string> = cur?.secrets_enc ? JSON.parse(openSecret(kek, aad(ctx.tenantId, p.id), cur.secrets_enc)) as Record<string, string> : {};
          let secretsChanged = false;
          for (const [k, v] of Object.entries(body.config)) {
            if (known.get(k)!.secret) { secretsChanged = true; if (v === null || v === undefined) delete secrets[k]; else secrets[k] = v; }
            else if (v !== null && v !== undefined) plain[k] = v;
          }
          const names = Object.keys(secrets).sort();
          const sealed = secretsChanged ? { enc: names.length ? sealSecret(kek, aad(ctx.tenantId, p.id), JSON.stringify(secrets)) : null, names } : undefined;
          const row = await store.plugins.setConfig(p.id, plain, sealed);
          // Views mask the secrets, so the audit entry says which changed and never what they are.
          return { result: pluginView(p, row), resourceId: p.id, before: pluginView(p, cur), after: pluginView(p, row) };
        });
        return { body: view };
      },
    }),
    toggle(true),
    toggle(false),
  ];
}
