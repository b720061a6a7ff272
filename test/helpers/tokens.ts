import { adminAudience, ADMIN_SCOPE } from '../../src/admin/context.js';
import { bootstrap, type BootstrapResult } from '../../src/bootstrap.js';
import { createClient } from '../../src/clients/create.js';
import { GRANT } from '../../src/clients/model.js';
import { uniqueName } from './env.js';
import type { TestServer } from './server.js';

/** A fresh tenant with the bootstrap clients (admin, web, exchanger, resource server) on this server. */
export async function setupTenant(srv: TestServer, label = 'tenant', platform = false): Promise<BootstrapResult> {
  return bootstrap(srv.config, srv.deps.sql, uniqueName(label), { platform, onClientChanged: (id) => srv.deps.tokens.clients.changed(id) });
}

/**
 * A Bearer token for /api/admin of the given tenant with exactly these permissions, issued to a machine
 * client of that tenant (created on first use) as client_credentials would issue it.
 */
export async function adminToken(srv: TestServer, opts: { tenantId: string; permissions: string[]; platform?: boolean; scope?: string; ttlSeconds?: number }): Promise<string> {
  const clientId = `${opts.tenantId}-test-admin`;
  const existing = await srv.deps.tokens.clients.get(clientId);
  if (!existing) {
    await srv.deps.sql`insert into tenants (id, name) values (${opts.tenantId}, ${opts.tenantId}) on conflict do nothing`;
    await createClient(srv.deps.sql, srv.deps.tokens.secretKey, {
      clientId, tenantId: opts.tenantId, name: 'Test administrator', grantTypes: [GRANT.clientCredentials], scopes: [ADMIN_SCOPE],
      allowedAudiences: [adminAudience(srv.config.issuer)],
    }).catch(() => undefined);
    await srv.deps.tokens.clients.changed(clientId);
  }
  const t = await srv.deps.tokens.accessTokens.issue({
    tenant: opts.tenantId, sub: clientId, clientId, aud: adminAudience(srv.config.issuer), scope: opts.scope ?? ADMIN_SCOPE,
    ttlSeconds: opts.ttlSeconds ?? 600,
    extra: { permissions: opts.permissions, tenant_scopes: [opts.platform ? { scope_mode: 'all', tenant_id: null } : { scope_mode: 'none', tenant_id: null }] },
  });
  return t.token;
}

/** HTTP Basic header for a client. */
export function basic(clientId: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

/** POSTs a form with Basic client authentication. */
export function postForm(url: string, client: { client_id: string; client_secret: string }, form: Record<string, string | string[]>): Promise<Response> {
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(form)) for (const x of Array.isArray(v) ? v : [v]) body.append(k, x);
  return fetch(url, { method: 'POST', headers: { authorization: basic(client.client_id, client.client_secret), 'content-type': 'application/x-www-form-urlencoded' }, body });
}
