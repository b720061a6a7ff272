import type { Deps } from '../deps.js';
import type { TokenServices } from '../services.js';
import { principalsWithCredentialEdges } from '../cross-tenant/sweeps.js';
import { resyncPrincipal } from './service.js';

/** How often the credential sweep runs (the `principal-sweep` job's schedule, src/jobs/table.ts). */
export const CREDENTIAL_SWEEP_MS = 5000;

/**
 * Credentials enter and leave their backing client's jwks at notBefore and expiresAt. The periodic
 * `principal-sweep` job (one run per interval for the deployment) re-syncs the principals whose
 * credentials crossed such an edge recently and announces the changed clients, so a key works from
 * notBefore and stops at expiresAt within about one interval. The window covers three intervals, so a
 * late or missed run is made up by the next. Returns how many principals changed.
 */
export async function sweepCredentialEdges(deps: Pick<Deps, 'sql' | 'store'> & { tokens: Pick<TokenServices, 'clients'> }, now = Date.now()): Promise<number> {
  let n = 0;
  for (const r of await principalsWithCredentialEdges(deps.sql, now - CREDENTIAL_SWEEP_MS * 3, now)) {
    const out = await resyncPrincipal(deps.store.forTenant(r.tenant_id).principals, r.principal_id);
    if (out) { await deps.tokens.clients.changed(out.principal.client_id); n++; }
  }
  return n;
}
