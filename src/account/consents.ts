import { depsFor } from '../request-deps.js';
import type { Deps } from '../deps.js';
import type { Route } from '../http/types.js';
import { userBearer } from '../login/bearer.js';
import { revokeConsent } from './revoke-consent.js';
import type { ConsentRow } from '../store/consents.js';

/** The spec's User consent object (timestamps in epoch milliseconds). */
export function consentView(r: ConsentRow): Record<string, unknown> {
  const out: Record<string, unknown> = { id: r.id, clientId: r.client_id, scopes: r.scopes, grantedAt: Number(r.granted_at) };
  if (r.client_name) out.clientName = r.client_name;
  if (r.selected_scopes) out.selectedScopes = r.selected_scopes;
  if (r.expires_at !== null) out.expiresAt = Number(r.expires_at);
  if (r.privacy_policy_version !== null || r.tos_version !== null || r.consent_version !== null) {
    out.policyVersions = { privacyPolicyVersion: r.privacy_policy_version ?? undefined, tosVersion: r.tos_version ?? undefined, consentVersion: r.consent_version ?? undefined };
  }
  return out;
}

/** GET /api/user/consents: the caller's consents; DELETE one to withdraw it (Bearer token of the end user). */
export function consentRoutes(base: Deps): Route[] {
  return [{
    method: 'GET', path: '/api/user/consents', iface: 'admin',
    doc: { summary: 'The signed-in user\'s consents to applications', tags: ['account'], security: 'bearer', responses: { 200: 'login.consent-list' }, errors: [401] },
    handler: async (req) => {
      // A sampled request's view (its clients make spans under it); the process's deps otherwise.
      const deps = depsFor(base, req);
      const p = await userBearer(deps, req, deps.config.issuer);
      const rows = await deps.store.forTenant(p.tenant).consents.listForUser(p.sub!);
      return { headers: { 'Cache-Control': 'no-store' }, body: { consents: rows.map(consentView), total: rows.length } };
    },
  }, {
    method: 'DELETE', path: '/api/user/consents/:id', iface: 'admin', body: 'none',
    doc: { summary: 'Withdraw a consent: the application\'s refresh and access tokens for the caller stop working', tags: ['account'], security: 'bearer', responses: { 204: null }, errors: [401, 404] },
    handler: async (req) => {
      // A sampled request's view (its clients make spans under it); the process's deps otherwise.
      const deps = depsFor(base, req);
      const p = await userBearer(deps, req, deps.config.issuer);
      await revokeConsent(deps, String(p.tenant), p.sub!, req.params.id!);
      return { status: 204, headers: { 'Cache-Control': 'no-store' } };
    },
  }];
}
