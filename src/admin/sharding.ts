import type { Deps } from '../deps.js';
import { Forbidden, NotFound, ValidationError } from '../errors.js';
import type { Route } from '../http/types.js';
import { adminContext, type AdminContext } from './context.js';
import { audited } from './mutate.js';
import { addGeneration, AUTH_CODE_SHARD_COUNT, generations, getSetting, lockSharding, putSetting, type GenerationRow } from './repo/sharding.js';

const READ = 'admin:settings:read';
const WRITE = 'admin:settings:write';
const tags = ['settings'];
const PATH = '/api/admin/settings/refresh-token-sharding';
const DEFAULT_AUTH_CODE_SHARDS = 16;

function generationView(g: GenerationRow) {
  return {
    generation: g.generation, shardCount: g.shard_count, shard_count: g.shard_count, activatedAt: Number(g.activated_at),
    deprecatedAt: g.deprecated_at === null ? null : Number(g.deprecated_at), createdBy: g.created_by, notes: g.notes,
  };
}

/** The spec's sharding config for one scope: its current generation and every earlier one, newest first. */
function configView(rows: GenerationRow[], clientId: string | null): Record<string, unknown> {
  const [cur, ...prev] = rows;
  return {
    currentGeneration: cur!.generation, currentShardCount: cur!.shard_count, previousGenerations: prev.map(generationView),
    updatedAt: Number(cur!.activated_at), updatedBy: cur!.created_by, clientId,
  };
}

/** Per-client overrides are for the caller's tenant's clients; the global setting is platform-wide. */
async function checkScope(deps: Deps, ctx: AdminContext, clientId: string | undefined, writing: boolean): Promise<void> {
  if (clientId !== undefined) {
    if (!(await deps.store.forTenant(ctx.tenantId).clients.get(clientId))) throw new NotFound('client_not_found', 'No such client.');
  } else if (writing && !ctx.platform) {
    throw new Forbidden('forbidden', 'Only platform administrators may change the global sharding settings.');
  }
}

async function authCodeShards(deps: Deps): Promise<number> {
  return Number((await getSetting<number>(deps.sql, AUTH_CODE_SHARD_COUNT))?.value ?? DEFAULT_AUTH_CODE_SHARDS);
}

/**
 * Refresh token sharding settings (spec: PUT refresh-token-sharding). Each change creates a new shard
 * generation and deprecates the previous one of its scope; tokens carry their generation, so those of
 * older generations keep resolving their revocation and refresh records.
 */
export function shardingRoutes(deps: Deps): Route[] {
  return [
    {
      method: 'GET', path: PATH, iface: 'admin', querySchema: 'query.admin-sharding',
      doc: { summary: 'Current refresh token sharding config (global, or a client\'s override with clientId)', tags, permission: READ, responses: { 200: 'admin.sharding-config' }, errors: [401, 403, 404, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, READ);
        const clientId = (req.queryData as { clientId?: string }).clientId;
        await checkScope(deps, ctx, clientId, false);
        let rows = clientId !== undefined ? await generations(deps.sql, clientId) : [];
        const inherited = rows.length === 0;
        if (inherited) rows = await generations(deps.sql, '');
        return { body: { ...configView(rows, inherited ? null : clientId ?? null), inherited: clientId !== undefined && inherited, authCodeShardCount: await authCodeShards(deps) } };
      },
    },
    {
      method: 'PUT', path: PATH, iface: 'admin', body: 'json', bodySchema: 'admin.sharding-update',
      doc: { summary: 'Create a new refresh token shard generation (global: platform admins, must equal the auth code shard count unless skip_sync_check; clientId: a per-client override)', tags, permission: WRITE, responses: { 200: 'admin.sharding-result' }, errors: [401, 403, 404, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        const b = req.data as { shardCount: number; clientId?: string; notes?: string; skip_sync_check?: boolean };
        await checkScope(deps, ctx, b.clientId, true);
        const scope = b.clientId ?? '';
        const out = await audited(deps, ctx, req, { action: 'settings.refresh_token_sharding.update', resourceType: 'settings', resourceId: b.clientId ? `refresh-token-sharding:${b.clientId}` : 'refresh-token-sharding', severity: 'warn' }, async (tx) => {
          await lockSharding(tx);
          if (!b.clientId && !b.skip_sync_check) {
            const ac = await authCodeShards(deps);
            if (b.shardCount !== ac) throw new ValidationError({ shardCount: [`must equal the auth code shard count (${ac}) unless skip_sync_check is true`] });
          }
          // A client without an override so far moves from the global generation.
          const before = (await generations(tx, scope))[0] ?? (await generations(tx, ''))[0]!;
          const g = await addGeneration(tx, scope, b.shardCount, ctx.actor.id, b.notes ?? null);
          const config = configView(await generations(tx, scope), b.clientId ?? null);
          const message = `Refresh token sharding${b.clientId ? ` for client ${b.clientId}` : ''} changed from ${before.shard_count} to ${g.shard_count} shards; generation ${g.generation} is now current (generation ${before.generation} deprecated).`;
          return { result: { success: true, message, config }, before: generationView(before), after: generationView(g) };
        });
        // This process uses the new generation at once; the others pick it up within their 5 s refresh.
        await deps.tokens.sharding.load();
        return { body: out };
      },
    },
    {
      method: 'GET', path: '/api/admin/settings/auth-code-sharding', iface: 'admin',
      doc: { summary: 'The authorization code shard count a global refresh token resharding must match', tags, permission: READ, responses: { 200: 'admin.auth-code-sharding' }, errors: [401, 403], security: 'bearer' },
      handler: async (req) => {
        await adminContext(deps, req, READ);
        const s = await getSetting<number>(deps.sql, AUTH_CODE_SHARD_COUNT);
        return { body: { shardCount: Number(s?.value ?? DEFAULT_AUTH_CODE_SHARDS), updatedAt: s ? Number(s.updated_at) : null, updatedBy: s?.updated_by ?? null } };
      },
    },
    {
      method: 'PUT', path: '/api/admin/settings/auth-code-sharding', iface: 'admin', body: 'json', bodySchema: 'admin.auth-code-sharding-update',
      doc: { summary: 'Set the authorization code shard count (platform admins)', tags, permission: WRITE, responses: { 200: 'admin.auth-code-sharding' }, errors: [401, 403, 422], security: 'bearer' },
      handler: async (req) => {
        const ctx = await adminContext(deps, req, WRITE);
        if (!ctx.platform) throw new Forbidden('forbidden', 'Only platform administrators may change the global sharding settings.');
        const n = (req.data as { shardCount: number }).shardCount;
        await audited(deps, ctx, req, { action: 'settings.auth_code_sharding.update', resourceType: 'settings', resourceId: 'auth-code-sharding', severity: 'warn' }, async (tx) => {
          const prev = await getSetting<number>(tx, AUTH_CODE_SHARD_COUNT);
          await putSetting(tx, AUTH_CODE_SHARD_COUNT, n, ctx.actor.id);
          return { result: null, before: { shardCount: prev?.value ?? DEFAULT_AUTH_CODE_SHARDS }, after: { shardCount: n } };
        });
        const s = (await getSetting<number>(deps.sql, AUTH_CODE_SHARD_COUNT))!;
        return { body: { shardCount: Number(s.value), updatedAt: Number(s.updated_at), updatedBy: s.updated_by } };
      },
    },
  ];
}
