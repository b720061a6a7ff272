import { randomBytes } from 'node:crypto';
import { adminAudience, ADMIN_SCOPE } from '../../src/admin/context.js';
import { api, type Api } from '../admin/helpers.js';
import type { TestServer } from '../helpers/server.js';
import { adminToken } from '../helpers/tokens.js';

export const ALL = ['admin:approvals:read', 'admin:approvals:write', 'admin:approvals:approve', 'admin:approvals:grant:issue'];

export interface Person { id: string; email: string; token: string; call: Api }

/** A user of the tenant with an admin token (as the admin console's login would issue it) holding `permissions`. */
export async function person(srv: TestServer, tenantId: string, label: string, permissions: string[] = ALL, opts: { authTime?: number } = {}): Promise<Person> {
  await adminToken(srv, { tenantId, permissions: [] }); // makes sure the tenant's admin client exists
  const email = `${label}-${randomBytes(4).toString('hex')}@example.test`;
  const u = (await srv.deps.store.forTenant(tenantId).users.insert({ email, name: label, emailVerified: true }))!;
  const clientId = `${tenantId}-test-admin`;
  const token = (await srv.deps.tokens.accessTokens.issue({
    tenant: tenantId, sub: u.id, clientId, aud: adminAudience(srv.config.issuer), scope: ADMIN_SCOPE, ttlSeconds: 600,
    extra: { permissions, tenant_scopes: [{ scope_mode: 'none', tenant_id: null }], email, name: label, auth_time: opts.authTime ?? Math.floor(Date.now() / 1000) },
  })).token;
  return { id: u.id, email, token, call: api(srv, token) };
}

/** A request body with the given steps. */
export function requestBody(audience: string, approvals: Array<Record<string, unknown>>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    request_surface: 'support_console', requested_action: 'read', target_subject_type: 'user', target_subject_id: 'usr_customer_42',
    resource_class: 'user_profile', reason_code: 'customer_ticket', reason_note: 'Customer cannot sign in',
    ticket_reference: { system: 'zendesk', id: 'ZD-1234' }, reference: 'case 77', policy_preset: 'support_case_default', audience, approvals, ...extra,
  };
}

export const step = (key: string, subjectId: string | null, method = 'portal_confirm') =>
  ({ step_key: key, side: 'admin_operator', subject_type: 'admin_user', subject_id: subjectId, method });
