import t from 'tap';
import { storeRefreshToken } from '../../src/tokens/refresh-tokens.js';
import { startTestServer } from '../helpers/server.js';
import { adminToken, postForm, setupTenant } from '../helpers/tokens.js';
import { api } from './helpers.js';

// Resharding refresh tokens: a new generation is used at once, older generations keep resolving.
const srv = await startTestServer();
t.teardown(() => srv.close());
const boot = await setupTenant(srv, 'shard');
const platform = api(srv, await adminToken(srv, { tenantId: boot.tenant_id, permissions: ['admin:*'], platform: true }));
const tenantAdmin = api(srv, await adminToken(srv, { tenantId: `${boot.tenant_id}-x`, permissions: ['admin:*'] }));
const PATH = '/api/admin/settings/refresh-token-sharding';
const introspect = async (token: string) => (await (await postForm(`${srv.url}/introspect`, boot.clients.resource_server, { token })).json() as any).active;
const jtiOf = (tok: string) => JSON.parse(Buffer.from(tok.split('.')[1]!, 'base64url').toString()).jti as string;
const ccToken = async () => (await (await postForm(`${srv.url}/token`, boot.clients.exchanger, { grant_type: 'client_credentials' })).json() as any).access_token as string;

t.test('per-client override: refresh tokens of the previous generation still refresh; new ones use the new generation', async (t) => {
  const web = boot.clients.web;
  const g0 = srv.deps.tokens.sharding.current(web.client_id);
  const rt = await storeRefreshToken(srv.deps.sql, { tenantId: boot.tenant_id, clientId: web.client_id, sub: 'u_1', scope: 'openid read', accessJti: null, authTime: null, claims: { aud: 'https://api.svc.local' }, ttlSeconds: 3600, generation: g0 });
  t.match(rt, new RegExp(`^rt\\.g${g0.generation}\\.`));

  const r1 = await platform('PUT', PATH, { shardCount: 4, clientId: web.client_id, notes: 'split web' });
  t.equal(r1.status, 200, JSON.stringify(r1.body));
  t.equal(r1.body.success, true);
  const gen1 = r1.body.config.currentGeneration;
  t.ok(gen1 > g0.generation);
  t.match(r1.body.message, new RegExp(`from ${g0.shardCount} to 4 shards; generation ${gen1} is now current`));
  t.match(r1.body.config, { currentShardCount: 4, updatedBy: `${boot.tenant_id}-test-admin`, previousGenerations: [], clientId: web.client_id });
  t.same(srv.deps.tokens.sharding.current(web.client_id), { generation: gen1, shardCount: 4 }, 'this process uses it at once');

  const r2 = await platform('PUT', PATH, { shardCount: 2, clientId: web.client_id });
  const gen2 = r2.body.config.currentGeneration;
  t.equal(r2.body.config.previousGenerations.length, 1);
  t.match(r2.body.config.previousGenerations[0], { generation: gen1, shardCount: 4, shard_count: 4, notes: 'split web', createdBy: `${boot.tenant_id}-test-admin` });
  t.type(r2.body.config.previousGenerations[0].deprecatedAt, 'number');

  const refreshed = await postForm(`${srv.url}/token`, web, { grant_type: 'refresh_token', refresh_token: rt });
  const body = await refreshed.json() as any;
  t.equal(refreshed.status, 200, JSON.stringify(body));
  t.match(body.refresh_token, new RegExp(`^rt\\.g${gen2}\\.[01]\\.`), 'new refresh token in the new generation, shard < 2');
  t.match(jtiOf(body.access_token), new RegExp(`^g${gen2}:[a-z0-9-]+:[01]:`));

  const got = await platform('GET', `${PATH}?clientId=${web.client_id}`);
  t.match(got.body, { currentGeneration: gen2, currentShardCount: 2, inherited: false });
  const other = await platform('GET', `${PATH}?clientId=${boot.clients.exchanger.client_id}`);
  t.equal(other.body.inherited, true);
  t.equal((await platform('PUT', PATH, { shardCount: 2, clientId: 'no-such-client' })).body.error, 'client_not_found');
});

t.test('global resharding: sync check, platform only, previous generation tokens revoke and introspect correctly', async (t) => {
  const before = await platform('GET', PATH);
  t.equal(before.status, 200);
  const ac = before.body.authCodeShardCount;
  const old = await ccToken();
  t.match(jtiOf(old), new RegExp(`^g${before.body.currentGeneration}:`));

  const mismatch = await platform('PUT', PATH, { shardCount: ac + 1 });
  t.equal(mismatch.status, 422);
  t.match(mismatch.body.details.shardCount[0], /auth code shard count/);
  const denied = await tenantAdmin('PUT', PATH, { shardCount: ac, skip_sync_check: true });
  t.equal(denied.status, 403);
  t.equal((await platform('PUT', PATH, { shardCount: 0 })).status, 422);

  const r = await platform('PUT', PATH, { shardCount: ac + 1, skip_sync_check: true, notes: 'test' });
  t.equal(r.status, 200);
  const gen = r.body.config.currentGeneration;
  t.equal(r.body.config.previousGenerations[0].generation, before.body.currentGeneration);
  t.type(r.body.config.previousGenerations[0].deprecatedAt, 'number');
  const fresh = await ccToken();
  t.match(jtiOf(fresh), new RegExp(`^g${gen}:`));

  t.equal(await introspect(old), true, 'previous generation token still introspects');
  const rv = await postForm(`${srv.url}/revoke`, boot.clients.exchanger, { token: old });
  t.equal(rv.status, 200);
  t.equal(await introspect(old), false, 'and its revocation resolves');
  t.equal(await introspect(fresh), true);

  // Syncing the auth code shard count makes the plain update pass; then restore the original count.
  const ac2 = await platform('PUT', '/api/admin/settings/auth-code-sharding', { shardCount: ac + 1 });
  t.equal(ac2.body.shardCount, ac + 1);
  t.equal((await tenantAdmin('PUT', '/api/admin/settings/auth-code-sharding', { shardCount: 3 })).status, 403);
  t.equal((await platform('PUT', PATH, { shardCount: ac + 1 })).status, 200);
  await platform('PUT', '/api/admin/settings/auth-code-sharding', { shardCount: ac });
  t.equal((await platform('PUT', PATH, { shardCount: before.body.currentShardCount, skip_sync_check: true, notes: 'restore' })).status, 200);
  const audit = await platform('GET', '/api/admin/admin-audit-log?action=settings.refresh_token_sharding.update&limit=100');
  t.ok(audit.body.items.some((e: any) => e.result === 'failure' && e.metadata.error === 'validation_error'), 'the refused update is audited');
});
