import type { Config } from './config.js';
import { adminAudience, ADMIN_SCOPE } from './admin-access.js';
import { createClient, type ClientInput } from './clients/create.js';
import { GRANT } from './clients/model.js';
import { ClientRepository } from './store/clients.js';
import type { Sql } from './sql.js';
import { AccessTokens } from './tokens/access-tokens.js';
import { ensureKeys, KeyRing } from './tokens/keys.js';
import { randomToken } from './store/ids.js';
import { deriveKey, hashSecret } from './tokens/secrets.js';
import { ShardingCache } from './tokens/sharding.js';
import { Signer } from './tokens/signer.js';

export const DEFAULT_TENANT_ID = 'default';
export const DEMO_RESOURCE_AUDIENCE = 'https://api.svc.local';

export interface BootstrapResult {
  issuer: string;
  tenant_id: string;
  admin_access_token: string;
  admin_client: { client_id: string; client_secret: string };
  clients: {
    web: { client_id: string; client_secret: string; redirect_uris: string[] };
    admin_console: { client_id: string; client_secret: string; redirect_uris: string[]; audience: string };
    /** The browser console at /console: a public client (PKCE, no secret). */
    console: { client_id: string; redirect_uris: string[]; post_logout_redirect_uris: string[]; audience: string };
    exchanger: { client_id: string; client_secret: string; audience: string };
    resource_server: { client_id: string; client_secret: string; audience: string };
  };
  mint_more: string;
}

/**
 * Idempotently creates a tenant (the default one unless named), its platform administrator client and
 * three demo clients. Secrets are only ever stored hashed, so each run issues fresh secrets for these
 * bootstrap clients and prints them, together with a platform admin access token.
 */
export async function bootstrap(config: Config, sql: Sql, tenantId = DEFAULT_TENANT_ID, opts: { platform?: boolean; onClientChanged?: (clientId: string) => Promise<void> } = {}): Promise<BootstrapResult> {
  const secretKey = deriveKey(config.keyEncryptionKey, 'client-secrets');
  const platform = opts.platform ?? tenantId === DEFAULT_TENANT_ID;
  // A platform tenant stays one; bootstrap never demotes (its people administer every tenant).
  await sql`insert into tenants (id, name, platform) values (${tenantId}, ${tenantId === DEFAULT_TENANT_ID ? 'Default tenant' : tenantId}, ${platform})
    on conflict (id) do update set platform = tenants.platform or excluded.platform`;
  await ensureKeys(sql, config.keyEncryptionKey, config.tokenSigningAlg);

  const ensure = async (clientId: string, input: Omit<ClientInput, 'tenantId' | 'clientId'>): Promise<string> => {
    const secret = randomToken(32);
    const clients = new ClientRepository(sql, tenantId);
    if (await clients.setSecretHash(clientId, hashSecret(secretKey, secret))) {
      // Bootstrapped before under another ISSUER (npm start moved from http://127.0.0.1:8080 to http://localhost:8080): the new address works too.
      await clients.addAddresses(clientId, { redirectUris: input.redirectUris, postLogoutRedirectUris: input.postLogoutRedirectUris, allowedAudiences: input.allowedAudiences });
      await opts.onClientChanged?.(clientId);
      return secret;
    }
    const { clientSecret } = await createClient(sql, secretKey, { ...input, tenantId, clientId });
    return clientSecret!;
  };
  const ids = { app: `${tenantId}-console`, console: `${tenantId}-admin-console`, admin: `${tenantId}-admin`, web: `${tenantId}-web`, exchanger: `${tenantId}-exchanger`, rs: `${tenantId}-resource-server` };
  const redirect = `${config.issuer}/demo/callback`;
  const adminSecret = await ensure(ids.admin, {
    name: 'Platform administrator', grantTypes: [GRANT.clientCredentials], scopes: [ADMIN_SCOPE], allowedAudiences: [adminAudience(config.issuer)],
    permissions: ['admin:*'], tenantScopes: [platform ? { scope_mode: 'all', tenant_id: null } : { scope_mode: 'allow', tenant_id: tenantId }], accessTokenTtl: 3600,
  });
  const webSecret = await ensure(ids.web, {
    name: 'Demo web application', grantTypes: [GRANT.authorizationCode, GRANT.refreshToken], scopes: ['openid', 'email', 'offline_access', 'read'],
    redirectUris: [redirect], postLogoutRedirectUris: [`${config.issuer}/demo/logged-out`], allowedAudiences: [DEMO_RESOURCE_AUDIENCE], firstParty: true,
  });
  // Human administrators sign in through the login flow with this client; their tokens carry their roles' permissions.
  const consoleSecret = await ensure(ids.console, {
    name: 'Administration console', grantTypes: [GRANT.authorizationCode, GRANT.refreshToken], scopes: ['openid', 'email', ADMIN_SCOPE],
    redirectUris: [redirect], postLogoutRedirectUris: [`${config.issuer}/demo/logged-out`], allowedAudiences: [adminAudience(config.issuer)], firstParty: true,
  });
  // The single-page console at /console (issue 33): a public client holding no secret, so it is
  // created once and afterwards only gains this issuer's addresses; it never gets a secret.
  const consoleApp = { redirectUris: [`${config.issuer}/console/callback`], postLogoutRedirectUris: [`${config.issuer}/console/signed-out`], audience: adminAudience(config.issuer) };
  const consoleClients = new ClientRepository(sql, tenantId);
  if (await consoleClients.get(ids.app)) {
    await consoleClients.addAddresses(ids.app, { redirectUris: consoleApp.redirectUris, postLogoutRedirectUris: consoleApp.postLogoutRedirectUris, allowedAudiences: [consoleApp.audience] });
    await opts.onClientChanged?.(ids.app);
  } else {
    await createClient(sql, secretKey, {
      tenantId, clientId: ids.app, name: 'Console', authMethod: 'none', grantTypes: [GRANT.authorizationCode, GRANT.refreshToken], scopes: ['openid', 'email', ADMIN_SCOPE],
      redirectUris: consoleApp.redirectUris, postLogoutRedirectUris: consoleApp.postLogoutRedirectUris, allowedAudiences: [consoleApp.audience], firstParty: true,
    });
  }
  const exSecret = await ensure(ids.exchanger, {
    name: 'Demo token exchanger', grantTypes: [GRANT.clientCredentials, GRANT.tokenExchange], scopes: ['read', 'write'], allowedAudiences: [DEMO_RESOURCE_AUDIENCE],
  });
  const rsSecret = await ensure(ids.rs, {
    name: 'Demo resource server', grantTypes: [], audience: DEMO_RESOURCE_AUDIENCE, canIntrospect: true, strictValidation: true,
  });

  const at = await mintAdminToken(config, sql, tenantId, platform);
  return {
    issuer: config.issuer,
    tenant_id: tenantId,
    admin_access_token: at,
    admin_client: { client_id: ids.admin, client_secret: adminSecret },
    clients: {
      web: { client_id: ids.web, client_secret: webSecret, redirect_uris: [redirect] },
      admin_console: { client_id: ids.console, client_secret: consoleSecret, redirect_uris: [redirect], audience: adminAudience(config.issuer) },
      console: { client_id: ids.app, redirect_uris: consoleApp.redirectUris, post_logout_redirect_uris: consoleApp.postLogoutRedirectUris, audience: consoleApp.audience },
      exchanger: { client_id: ids.exchanger, client_secret: exSecret, audience: DEMO_RESOURCE_AUDIENCE },
      resource_server: { client_id: ids.rs, client_secret: rsSecret, audience: DEMO_RESOURCE_AUDIENCE },
    },
    mint_more: `curl -s -u ${ids.admin}:<admin_client.client_secret> -d grant_type=client_credentials -d scope=${ADMIN_SCOPE} ${config.issuer}/token   (or: svc admin token)`,
  };
}

/** Mints an access token for a tenant's administrator client, as client_credentials would. */
export async function mintAdminToken(config: Config, sql: Sql, tenantId = DEFAULT_TENANT_ID, platform = tenantId === DEFAULT_TENANT_ID, ttlSeconds = 3600): Promise<string> {
  const ring = new KeyRing(sql, config.keyEncryptionKey, config.tokenSigningAlg);
  await ring.load();
  const sharding = new ShardingCache(sql);
  await sharding.load();
  const clientId = `${tenantId}-admin`;
  const t = await new AccessTokens(config, ring, new Signer(ring), sharding).issue({
    tenant: tenantId, sub: clientId, clientId, aud: adminAudience(config.issuer), scope: ADMIN_SCOPE, ttlSeconds,
    extra: { permissions: ['admin:*'], tenant_scopes: [platform ? { scope_mode: 'all', tenant_id: null } : { scope_mode: 'allow', tenant_id: tenantId }] },
  });
  return t.token;
}
