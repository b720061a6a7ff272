import type { Browser } from 'playwright-core';
import type { SmtpSink } from '../../src/mail/dev-sink.js';
import { consoleDriver } from '../helpers/console.js';
import { uniqueName } from '../helpers/env.js';
import { j } from '../helpers/http.js';
import type { TestServer } from '../helpers/server.js';
import { adminToken } from '../helpers/tokens.js';
import { uniqueEmail } from '../login/fixtures.js';

/**
 * The console driver (test/helpers/console.ts) with what the operations tests arrange through the API:
 * calls as a machine administrator of a tenant, and people whose role grants given permissions (with
 * their user id, which approval steps and grants name).
 */
export function consoleBrowser(browser: Browser, srv: TestServer, sink: SmtpSink) {
  const base = srv.url;

  /** Calls the admin API as a machine administrator of the tenant (everything allowed). */
  async function call(tenantId: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const token = await adminToken(srv, { tenantId, permissions: ['admin:*'] });
    const res = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: res.status === 204 ? null : await j(res) };
  }

  /** A person of the tenant whose role grants these admin permissions: their email and user id. */
  async function administrator(tenantId: string, permissions: string[], label = 'operator'): Promise<{ email: string; id: string }> {
    const email = uniqueEmail(label);
    const user = await call(tenantId, 'POST', '/api/admin/users', { email });
    const role = await call(tenantId, 'POST', '/api/admin/roles', { name: uniqueName('console-role'), permissions });
    await call(tenantId, 'POST', `/api/admin/users/${user.body.id}/roles`, { role_id: role.body.id });
    return { email, id: user.body.id as string };
  }

  return { base, ...consoleDriver(browser, base, sink), call, administrator };
}
