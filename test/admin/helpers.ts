import { openFields } from '../../src/sealed-fields.js';
import { adminToken, setupTenant } from '../helpers/tokens.js';
import type { TestServer } from '../helpers/server.js';

export interface Api {
  (method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any; headers: Headers }>;
}

/** A JSON client for /api/admin with one bearer token. */
export function api(srv: TestServer, token: string): Api {
  return async (method, path, body, headers = {}) => {
    const res = await fetch(srv.url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
  };
}

/** A fresh tenant and an admin token holding `permissions` for it (tenant-scoped unless platform). */
export async function adminOf(srv: TestServer, permissions: string[] = ['admin:*'], label = 'adm', platform = false): Promise<{ tenantId: string; token: string; call: Api }> {
  const t = await setupTenant(srv, label);
  const token = await adminToken(srv, { tenantId: t.tenant_id, permissions, platform });
  return { tenantId: t.tenant_id, token, call: api(srv, token) };
}

/** Outbox rows of a tenant, oldest first. */
export async function events(srv: TestServer, tenantId: string): Promise<Array<{ event: string; data: any }>> {
  // Addresses in event data are sealed at rest (src/sealed-fields.ts); receivers get them opened.
  return (await srv.deps.sql<{ event: string; data: any }[]>`select event, data from event_outbox where tenant_id = ${tenantId} order by id`)
    .map((e) => ({ event: e.event, data: openFields(tenantId, e.data) }));
}
