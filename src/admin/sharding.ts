import type { Deps } from '../deps.js';
import { Forbidden, NotFound, ValidationError } from '../errors.js';
import type { SchemaTypes } from '../generated/types.js';
import type { Route } from '../http/types.js';
import { DEFAULT_AUTH_CODE_SHARDS, lockSharding, PlatformSharding, type GenerationRow } from '../store/sharding.js';
import type { Db } from '../sql.js';
import { adminRoute } from './route.js';

const READ = 'admin:settings:read';
const WRITE = 'admin:settings:write';
const tags = ['settings'];
const PATH = '/api/admin/settings/refresh-token-sharding';
type ShardingConfig = SchemaTypes['admin.sharding-config'];

function generationView(g: GenerationRow): ShardingConfig['previousGenerations'][number] {
  return {
    generation: g.generation, shardCount: g.shard_count, shard_count: g.shard_count, activatedAt: Number(g.activated_at),
    deprecatedAt: g.deprecated_at === null ? null : Number(g.deprecated_at), createdBy: g.created_by, notes: g.notes,
  };
}

/** The spec's sharding config for one scope: its current generation and every earlier one, newest first. */
function configView(rows: GenerationRow[], clientId: string | null): ShardingConfig {
  const [cur, ...prev] = rows;
  // The migration creates the first global generation, and a scope never loses its generations.
  if (!cur) throw new Error('sharding scope without a generation');
  return {
    currentGeneration: cur.generation, currentShardCount: cur.shard_count, previousGenerations: prev.map(generationView),
    updatedAt: Number(cur.activated_at), updatedBy: cur.created_by, clientId,
  };
}

const clientNotFound = () => new NotFound('client_not_found', 'No such client.');
const platformOnly = () => new Forbidden('forbidden', 'Only platform administrators may change the global sharding settings.');

async function authCodeShards(db: Db): Promise<number> {
  return Number((await new PlatformSharding(db).authCodeShardCount())?.value ?? DEFAULT_AUTH_CODE_SHARDS);
}

/**
 * Refresh token sharding settings (spec: PUT refresh-token-sharding). Each change creates a new shard
 * generation and deprecates the previous one of its scope; tokens carry their generation, so those of
 * older generations keep resolving their revocation and refresh records. Per-client overrides are for
 * the caller's tenant's clients; the global setting and the auth code shard count are platform-wide.
 */
export function shardingRoutes(deps: Deps): Route[] {
  return [
    adminRoute(deps, {
      method: 'GET', path: PATH, permission: READ, tags, query: 'query.admin-sharding',
      summary: 'Current refresh token sharding config (global, or a client\'s override with clientId)', response: { 200: 'admin.sharding-config' }, errors: [404],
      handler: async ({ deps, query, store }) => {
        const own = query.clientId !== undefined ? await store.sharding.clientGenerations(query.clientId) : [];
        if (!own) throw clientNotFound();
        const inherited = own.length === 0;
        const rows = inherited ? await new PlatformSharding(deps.sql).globalGenerations() : own;
        return { body: { ...configView(rows, inherited ? null : query.clientId ?? null), inherited: query.clientId !== undefined && inherited, authCodeShardCount: await authCodeShards(deps.sql) } };
      },
    }),
    adminRoute(deps, {
      method: 'PUT', path: PATH, permission: WRITE, tags, body: 'admin.sharding-update', response: { 200: 'admin.sharding-result' }, errors: [404],
      summary: 'Create a new refresh token shard generation (global: platform admins, must equal the auth code shard count unless skip_sync_check; clientId: a per-client override)',
      audit: { action: 'settings.refresh_token_sharding.update', resourceType: 'settings', severity: 'warn' },
      handler: async ({ deps, ctx, body, store, mutate }) => {
        const { clientId, shardCount } = body;
        const notes = body.notes ?? null;
        // Refused scopes answer before the change is attempted (and so are not audited as failed changes).
        if (clientId !== undefined && !(await store.sharding.clientGenerations(clientId))) throw clientNotFound();
        if (clientId === undefined && !ctx.platform) throw platformOnly();
        const out = await mutate(async (tx, store) => {
          await lockSharding(tx);
          const platform = new PlatformSharding(tx);
          if (clientId === undefined && !body.skip_sync_check) {
            const ac = await authCodeShards(tx);
            if (shardCount !== ac) throw new ValidationError({ shardCount: [`must equal the auth code shard count (${ac}) unless skip_sync_check is true`] });
          }
          const scope = clientId !== undefined
            ? { list: () => store.sharding.clientGenerations(clientId), add: () => store.sharding.addClientGeneration(clientId, shardCount, ctx.actor.id, notes) }
            : { list: () => platform.globalGenerations(), add: () => platform.addGlobalGeneration(shardCount, ctx.actor.id, notes) };
          // A client without an override so far moves from the global generation.
          const before = (await scope.list())?.[0] ?? (await platform.globalGenerations())[0];
          const g = await scope.add();
          const rows = await scope.list();
          // Null only when the client was deleted since the check above.
          if (!g || !rows || !before) throw clientNotFound();
          const config = configView(rows, clientId ?? null);
          const message = `Refresh token sharding${clientId ? ` for client ${clientId}` : ''} changed from ${before.shard_count} to ${g.shard_count} shards; generation ${g.generation} is now current (generation ${before.generation} deprecated).`;
          return {
            result: { success: true, message, config }, resourceId: clientId ? `refresh-token-sharding:${clientId}` : 'refresh-token-sharding',
            before: generationView(before), after: generationView(g),
          };
        });
        // This process uses the new generation at once; the others pick it up within their 5 s refresh.
        await deps.tokens.sharding.load();
        return { body: out };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/settings/auth-code-sharding', permission: READ, tags,
      summary: 'The authorization code shard count a global refresh token resharding must match', response: { 200: 'admin.auth-code-sharding' },
      handler: async () => {
        const s = await new PlatformSharding(deps.sql).authCodeShardCount();
        return { body: { shardCount: Number(s?.value ?? DEFAULT_AUTH_CODE_SHARDS), updatedAt: s ? Number(s.updated_at) : null, updatedBy: s?.updated_by ?? null } };
      },
    }),
    adminRoute(deps, {
      method: 'PUT', path: '/api/admin/settings/auth-code-sharding', permission: WRITE, tags, body: 'admin.auth-code-sharding-update',
      summary: 'Set the authorization code shard count (platform admins)', response: { 200: 'admin.auth-code-sharding' },
      audit: { action: 'settings.auth_code_sharding.update', resourceType: 'settings', severity: 'warn' },
      handler: async ({ ctx, body, mutate }) => {
        if (!ctx.platform) throw platformOnly();
        const s = await mutate(async (tx) => {
          const platform = new PlatformSharding(tx);
          const prev = await platform.authCodeShardCount();
          const next = await platform.setAuthCodeShardCount(body.shardCount, ctx.actor.id);
          return { result: next, resourceId: 'auth-code-sharding', before: { shardCount: prev?.value ?? DEFAULT_AUTH_CODE_SHARDS }, after: { shardCount: body.shardCount } };
        });
        return { body: { shardCount: Number(s.value), updatedAt: Number(s.updated_at), updatedBy: s.updated_by } };
      },
    }),
  ];
}
