import type { Deps } from '../deps.js';
import { resyncPrincipal } from './service.js';

const LOCK = 'principals:sweep';

/**
 * Credentials enter and leave their backing client's jwks at notBefore and expiresAt. Every interval one
 * HTTP process (Redis lock) re-syncs the principals whose credentials crossed such an edge recently and
 * announces the changed clients, so a key works from notBefore and stops at expiresAt within about one
 * interval. Returns a stop function.
 */
export function startCredentialSweeper(deps: Deps, intervalMs = 5000): () => void {
  let running = false;
  const tick = async () => {
    if (running) return;
    running = true;
    try {
      if ((await deps.redis.set(LOCK, String(process.pid), 'PX', intervalMs - 100, 'NX')) !== 'OK') return;
      const now = Date.now();
      const since = now - intervalMs * 3;
      const rows = await deps.sql<{ tenant_id: string; principal_id: string }[]>`
        select distinct tenant_id, principal_id from principal_credentials
        where (not_before > ${since} and not_before <= ${now}) or (expires_at > ${since} and expires_at <= ${now})`;
      for (const r of rows) {
        const out = await resyncPrincipal(deps.sql, r.tenant_id, r.principal_id);
        if (out) await deps.tokens.clients.changed(out.principal.client_id);
      }
    } catch (err) {
      deps.log.debug({ err }, 'principal credential sweep failed');
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => { void tick(); }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
